package nudge

import (
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/polecat-sidecar/sidecar/internal/settings/settingstest"
)

// TestConfig: New takes zero fields as the defaults and refuses a field
// out of its range, naming it.
func TestConfig(t *testing.T) {
	valid := func() Config {
		c := DefaultConfig()
		c.Path, c.Logger = filepath.Join(t.TempDir(), "nudges.json"), slog.New(slog.DiscardHandler)
		return c
	}
	settingstest.Run(t, valid, func(c Config) error { _, err := New(c, nil); return err }, []settingstest.Case[Config]{
		{Name: "defaults"},
		{Name: "zero is the default", Set: func(c *Config) { *c = Config{Path: c.Path} }},
		{Name: "no path", Set: func(c *Config) { c.Path = "" }, Want: "nudge: Path is required"},
		{Name: "negative TTL", Set: func(c *Config) { c.TTL = -time.Second }, Want: "TTL is -1s: it must be above 0"},
		{Name: "negative urgent TTL", Set: func(c *Config) { c.UrgentTTL = -time.Second }, Want: "UrgentTTL is -1s: it must be above 0"},
		{Name: "negative depth", Set: func(c *Config) { c.Depth = -1 }, Want: "Depth is -1: it must be above 0"},
		{Name: "negative attempt", Set: func(c *Config) { c.Attempt = -time.Second }, Want: "Attempt is -1s: it must be above 0"},
		{Name: "negative retry", Set: func(c *Config) { c.Retry = -time.Second }, Want: "Retry is -1s: it must be above 0"},
	})
}
