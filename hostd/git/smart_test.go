package git

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/polecat-sidecar/sidecar/internal/settings/settingstest"
)

func TestProtocolEnv(t *testing.T) {
	for h, want := range map[string]string{"": "", "version=2": "GIT_PROTOCOL=version=2", "version=1": "GIT_PROTOCOL=version=1"} {
		env, err := protocolEnv(h)
		if err != nil || strings.Join(env, "") != want {
			t.Errorf("%q: %v %v", h, env, err)
		}
	}
	for _, h := range []string{"version=0", "version=3", "version=2:object-format=sha256", "version=2\nGIT_DIR=/etc", "version=2 ", "VERSION=2", strings.Repeat("x", 1000)} {
		if _, err := protocolEnv(h); err == nil {
			t.Errorf("%q accepted", h)
		}
	}
}

// TestConfig: New takes zero fields as the defaults and refuses a field
// out of its range, a malformed branch pattern or polecat name, naming it.
// A negative RefreshAge or Reconcile means never; Validate, which hostd
// serve runs on its settings before New, refuses a zero one.
func TestConfig(t *testing.T) {
	valid := func() Config {
		c := DefaultConfig()
		c.Town, c.HooksDir, c.TempDir, c.Logger = t.TempDir(), t.TempDir(), t.TempDir(), slog.New(slog.DiscardHandler)
		return c
	}
	settingstest.Run(t, valid, func(c Config) error { _, err := New(c); return err }, []settingstest.Case[Config]{
		{Name: "defaults"},
		{Name: "zero is the default", Set: func(c *Config) { *c = Config{Town: c.Town, HooksDir: c.HooksDir, TempDir: c.TempDir} }},
		{Name: "never refresh nor reconcile", Set: func(c *Config) { c.RefreshAge, c.Reconcile = -time.Second, -time.Second }},
		{Name: "no town", Set: func(c *Config) { c.Town = "" }, Want: "git: Town is required"},
		{Name: "no hooks", Set: func(c *Config) { c.HooksDir = "" }, Want: "HooksDir is required"},
		{Name: "no temp dir", Set: func(c *Config) { c.TempDir = "" }, Want: "TempDir is required"},
		{Name: "negative refresh timeout", Set: func(c *Config) { c.RefreshTimeout = -time.Second }, Want: "RefreshTimeout is -1s: it must be above 0"},
		{Name: "negative processes", Set: func(c *Config) { c.MaxProcesses = -1 }, Want: "MaxProcesses is -1: it must be above 0"},
		{Name: "negative per polecat", Set: func(c *Config) { c.MaxProcessesPerPolecat = -1 }, Want: "MaxProcessesPerPolecat is -1: it must be above 0"},
		{Name: "negative wait", Set: func(c *Config) { c.ProcessWait = -time.Second }, Want: "ProcessWait is -1s: it must be above 0"},
		{Name: "negative idle", Set: func(c *Config) { c.IdleTimeout = -time.Second }, Want: "IdleTimeout is -1s: it must be above 0"},
		{Name: "negative push size", Set: func(c *Config) { c.MaxPushSize = -1 }, Want: "MaxPushSize is -1: it must be above 0"},
		{Name: "negative checkout size", Set: func(c *Config) { c.MaxCheckoutSize = -1 }, Want: "MaxCheckoutSize is -1: it must be above 0"},
		{Name: "negative checkout files", Set: func(c *Config) { c.MaxCheckoutFiles = -1 }, Want: "MaxCheckoutFiles is -1: it must be above 0"},
		{Name: "malformed pattern", Set: func(c *Config) { c.Branches = map[string][]string{"gastown": {"polecat/*"}} }, Want: `Branches.gastown is [polecat/*]: branch pattern "polecat/*": needs {name} exactly once`},
		{Name: "malformed polecat", Set: func(c *Config) { c.Polecats = map[string][]string{"gastown": {"no/slash"}} }, Want: `Polecats.gastown is "no/slash": `},
		{Name: "skip the worktree", Set: func(c *Config) { c.WorktreeGuard = GuardSkip }},
		{Name: "unknown guard", Set: func(c *Config) { c.WorktreeGuard = "ignore" }, Want: `WorktreeGuard is "ignore": it must be refuse or skip`},
		{Name: "more per polecat than in all", Set: func(c *Config) { c.MaxProcesses, c.MaxProcessesPerPolecat = 4, 8 }, Want: "MaxProcessesPerPolecat is 8: it must be at most MaxProcesses (4)"},
	})
	settingstest.Run(t, valid, Config.Validate, []settingstest.Case[Config]{
		{Name: "zero refresh age given", Set: func(c *Config) { c.RefreshAge = 0 }, Want: "RefreshAge is 0s: it must not be 0 (negative: never refresh)"},
		{Name: "zero reconcile given", Set: func(c *Config) { c.Reconcile = 0 }, Want: "Reconcile is 0s: it must not be 0 (negative: never reconcile)"},
	})
}
