package nudge

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/polecat-sidecar/sidecar/agent/tmux"
	"github.com/polecat-sidecar/sidecar/internal/settings/settingstest"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// TestDeliverDeadlineBetweenIdleLooks: a wait-idle nudge needs idle seen
// twice; when its deadline (or hostd withdrawing it) comes after the first
// look, it is busy and nothing is typed.
func TestDeliverDeadlineBetweenIdleLooks(t *testing.T) {
	dir := t.TempDir()
	srv := tmux.Server{Args: []string{"-S", filepath.Join(dir, "tmux.sock")}}
	t.Cleanup(func() { _ = exec.Command("tmux", append(srv.Args, "kill-server")...).Run() })
	if err := srv.NewSession(context.Background(), "polecat", []string{"sh", "-c", "printf '> '; sleep 60"}, nil); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // the prompt is drawn
	s, err := New(Config{Session: "polecat", Tmux: srv, StateDir: dir, Poll: time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	res := s.Deliver(ctx, wire.NudgeRequest{ID: "n1", Mode: wire.NudgeWaitIdle}, "too late", nil)
	if res.Outcome != wire.NudgeBusy || res.Detail == "" {
		t.Fatalf("outcome %+v, want busy with why", res)
	}
	if text, _ := srv.History(context.Background(), "polecat", 10); strings.Contains(text, "too late") {
		t.Fatalf("typed after its deadline:\n%s", text)
	}
}

// TestConfig: New takes zero fields as the defaults and refuses a field
// out of its range or a malformed pattern, naming it.
func TestConfig(t *testing.T) {
	valid := func() Config {
		c := DefaultConfig()
		c.StateDir = t.TempDir()
		return c
	}
	settingstest.Run(t, valid, func(c Config) error { _, err := New(c, nil); return err }, []settingstest.Case[Config]{
		{Name: "defaults"},
		{Name: "zero is the default", Set: func(c *Config) { *c = Config{StateDir: c.StateDir} }},
		{Name: "no busy patterns", Set: func(c *Config) { c.BusyPatterns = []string{} }},
		{Name: "negative silence", Set: func(c *Config) { c.Silence = -time.Second }, Want: "nudge: Silence is -1s: it must be above 0"},
		{Name: "negative poll", Set: func(c *Config) { c.Poll = -time.Second }, Want: "Poll is -1s: it must be above 0"},
		{Name: "no enter", Set: func(c *Config) { c.EnterTries = -1 }, Want: "EnterTries is -1: it must be above 0"},
		{Name: "malformed busy pattern", Set: func(c *Config) { c.BusyPatterns = []string{"("} }, Want: `nudge: BusyPatterns is "(": error parsing regexp`},
		{Name: "malformed prompt", Set: func(c *Config) { c.Prompt = "(" }, Want: `nudge: Prompt is "(": error parsing regexp`},
	})
}
