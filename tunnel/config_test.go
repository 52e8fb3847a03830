package tunnel

import (
	"fmt"
	"testing"
	"time"

	"github.com/polecat-sidecar/sidecar/internal/settings/settingstest"
)

// TestConfig: zero fields take the defaults, a zero KeepAlive is derived
// below IdleTimeout, one given must be below it, and a field out of its
// range is refused, naming it.
func TestConfig(t *testing.T) {
	// filled is withDefaults' error, or one if KeepAlive does not fit in
	// IdleTimeout.
	filled := func(c Config) error {
		got, err := c.withDefaults()
		if err == nil && got.KeepAlive >= got.IdleTimeout {
			return fmt.Errorf("KeepAlive %v does not fit in IdleTimeout %v", got.KeepAlive, got.IdleTimeout)
		}
		return err
	}
	settingstest.Run(t, DefaultConfig, filled, []settingstest.Case[Config]{
		{Name: "defaults"},
		{Name: "zero is the default", Set: func(c *Config) { *c = Config{} }},
		{Name: "an idle timeout below the longest derived keepalive", Set: func(c *Config) { *c = Config{IdleTimeout: 2 * time.Second} }},
		{Name: "a keepalive below the idle timeout", Set: func(c *Config) { c.KeepAlive, c.IdleTimeout = 9*time.Second, 10*time.Second }},
		{Name: "a keepalive not below the idle timeout", Set: func(c *Config) { c.KeepAlive, c.IdleTimeout = 10*time.Second, 10*time.Second },
			Want: "KeepAlive is 10s: it must be below IdleTimeout (10s)"},
		{Name: "more handshakes per source than in all", Set: func(c *Config) { c.MaxHandshakes, c.MaxHandshakesPerSource = 4, 5 },
			Want: "MaxHandshakesPerSource is 5: it must be at most MaxHandshakes (4)"},
		{Name: "smallest stream window", Set: func(c *Config) { c.StreamWindow = 256 << 10 }},
		{Name: "negative handshake timeout", Set: func(c *Config) { c.HandshakeTimeout = -time.Second }, Want: "tunnel config: HandshakeTimeout is -1s: it must be above 0"},
		{Name: "negative fallback delay", Set: func(c *Config) { c.FallbackDelay = -time.Second }, Want: "FallbackDelay is -1s: it must be above 0"},
		{Name: "negative keepalive", Set: func(c *Config) { c.KeepAlive = -time.Second }, Want: "KeepAlive is -1s: it must be at least 0"},
		{Name: "negative idle timeout", Set: func(c *Config) { c.IdleTimeout = -time.Second }, Want: "IdleTimeout is -1s: it must be above 0"},
		{Name: "negative streams", Set: func(c *Config) { c.MaxStreams = -1 }, Want: "MaxStreams is -1: it must be above 0"},
		{Name: "negative handshakes", Set: func(c *Config) { c.MaxHandshakes = -1 }, Want: "MaxHandshakes is -1: it must be above 0"},
		{Name: "negative handshakes per source", Set: func(c *Config) { c.MaxHandshakesPerSource = -1 }, Want: "MaxHandshakesPerSource is -1: it must be above 0"},
		{Name: "stream window below yamux's", Set: func(c *Config) { c.StreamWindow = 256<<10 - 1 }, Want: "StreamWindow is 262143: it must be at least 262144"},
		{Name: "negative connection window", Set: func(c *Config) { c.ConnWindow = -1 }, Want: "ConnWindow is -1: it must be above 0"},
	})
}
