package relay

import (
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/polecat-sidecar/sidecar/internal/settings/settingstest"
)

// TestConfig: New takes a zero Config as the defaults and refuses a field
// out of its range, naming it.
func TestConfig(t *testing.T) {
	valid := func() Config {
		c := DefaultConfig()
		c.Logger = slog.New(slog.DiscardHandler)
		return c
	}
	// New fills a zero Policy field from the default's, not only a zero
	// Policy.
	filled := func(c Config) error {
		s, err := New(c)
		if err == nil && (len(s.cfg.Policy.Allow) == 0 || len(s.cfg.Policy.EnvAllow) == 0) {
			return errors.New("policy left empty")
		}
		return err
	}
	settingstest.Run(t, valid, filled, []settingstest.Case[Config]{
		{Name: "defaults"},
		{Name: "zero is the default", Set: func(c *Config) { *c = Config{Logger: c.Logger} }},
		{Name: "a policy without EnvAllow takes the default's", Set: func(c *Config) { c.Policy.EnvAllow = nil }},
		{Name: "no limit on time", Set: func(c *Config) { c.Timeout = 0 }},
		{Name: "empty allow list", Set: func(c *Config) { c.Policy.Allow = map[string][]string{} }, Want: "relay: Policy.Allow is empty: it must allow at least one command"},
		{Name: "negative concurrency", Set: func(c *Config) { c.MaxConcurrent = -1 }, Want: "MaxConcurrent is -1: it must be above 0"},
		{Name: "negative queue wait", Set: func(c *Config) { c.QueueWait = -time.Second }, Want: "QueueWait is -1s: it must be above 0"},
		{Name: "negative timeout", Set: func(c *Config) { c.Timeout = -time.Second }, Want: "Timeout is -1s: it must be at least 0"},
		{Name: "negative stdin buffer", Set: func(c *Config) { c.MaxStdinBuffer = -1 }, Want: "MaxStdinBuffer is -1: it must be above 0"},
		{Name: "negative stdin stall", Set: func(c *Config) { c.StdinStall = -time.Second }, Want: "StdinStall is -1s: it must be above 0"},
	})
}
