package relay

import (
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/polecat-sidecar/sidecar/hostd/limits"
	"github.com/polecat-sidecar/sidecar/hostd/relay/internal/fixture"
	"github.com/polecat-sidecar/sidecar/internal/settings/settingstest"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
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
		{Name: "negative command rate", Set: func(c *Config) { c.CommandsPerMinute = -1 }, Want: "CommandsPerMinute is -1: it must be above 0"},
	})
}

// TestRelayRate: past CommandsPerMinute a polecat's command is refused,
// naming the setting and when to try again, and counted as a limit hit;
// a command the policy refuses spends nothing, and
// another polecat's commands are not held back.
func TestRelayRate(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Town, cfg.Logger = fixture.RealTempDir(t), slog.New(slog.DiscardHandler)
	cfg.Binaries = map[string]string{"gt": "/bin/true"}
	cfg.Policy.Allow = map[string][]string{"gt": {"version"}}
	cfg.AllowUnconfined = true // the budget is the same confined or not
	cfg.CommandsPerMinute = 3  // one more every 20 s: none while the test runs
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if out, code := relayed(t, s, fixture.Furiosa, "gt", "status"); code != -1 || !strings.Contains(out, "not allowed") {
		t.Fatalf("gt status: %d %q, want refused by the policy", code, out)
	}
	for i := range 3 {
		if out, code := relayed(t, s, fixture.Furiosa, "gt", "version"); code != 0 {
			t.Fatalf("command %d of 3: exit %d %q", i+1, code, out)
		}
	}
	hits := limits.Total()
	out, code := relayed(t, s, fixture.Furiosa, "gt", "version")
	if want := "more than 3 gt/bd commands in a minute from this polecat (relay.commands_per_minute): try again in "; code != -1 || !strings.Contains(out, want) {
		t.Fatalf("the 4th command: %d %q, want refused with %q", code, out, want)
	}
	if got := limits.Total(); got != hits+1 {
		t.Errorf("limit hits went from %d to %d, want one more", hits, got)
	}
	if out, code := relayed(t, s, wire.Identity{Rig: "gastown", Name: "nux"}, "gt", "version"); code != 0 {
		t.Errorf("another polecat's command: exit %d %q", code, out)
	}
}
