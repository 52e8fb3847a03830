package nudge

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/polecat-sidecar/sidecar/agent/tmux"
	"github.com/polecat-sidecar/sidecar/internal/parts/partstest"
	"github.com/polecat-sidecar/sidecar/internal/settings/settingstest"
	"github.com/polecat-sidecar/sidecar/tunnel"
	"github.com/polecat-sidecar/sidecar/tunnel/tunneltest"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// TestDeliverDeadlineBetweenIdleLooks: a wait-idle nudge needs idle seen
// twice; when its deadline (or hostd withdrawing it) comes after the first
// look, it is busy and nothing is typed.
func TestDeliverDeadlineBetweenIdleLooks(t *testing.T) {
	dir := t.TempDir()
	srv := promptPane(t, dir, "sleep 60")
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

// promptPane starts a tmux server in dir (ended with the test) whose
// session "polecat" shows a prompt, then runs then, and waits for the
// prompt to be drawn.
func promptPane(t *testing.T, dir, then string) tmux.Server {
	t.Helper()
	srv := tmux.Server{Args: []string{"-S", filepath.Join(dir, "tmux.sock")}}
	t.Cleanup(func() { _ = exec.Command("tmux", append(srv.Args, "kill-server")...).Run() })
	if err := srv.NewSession(context.Background(), "polecat", tmux.Spawn{Argv: []string{"sh", "-c", "printf '> '; " + then}}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if text, _ := srv.History(context.Background(), "polecat", 10); strings.Contains(text, ">") {
			return srv
		}
		if time.Now().After(deadline) {
			t.Fatal("the pane never showed its prompt")
		}
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

// TestWaitWhileHooksSayBusy: while Claude Code's hooks say busy, a
// wait-idle nudge does not read the pane every Poll (each look is a tmux
// process) but waits for the next hook event, and is typed as soon as
// Stop arrives. tmux is the real one, run through a script on PATH that
// counts its calls.
func TestWaitWhileHooksSayBusy(t *testing.T) {
	real, err := exec.LookPath("tmux")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	calls := filepath.Join(dir, "calls")
	spy := "#!/bin/sh\necho \"$*\" >> " + calls + "\nexec " + real + " \"$@\"\n"
	if err := os.WriteFile(filepath.Join(dir, "tmux"), []byte(spy), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	srv := promptPane(t, dir, "cat")
	hooks := &Hooks{}
	if err := hooks.Record(HookPreToolUse); err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{Session: "polecat", Tmux: srv, StateDir: dir, Poll: 50 * time.Millisecond}, hooks)
	if err != nil {
		t.Fatal(err)
	}
	started := countLines(t, calls)
	done := make(chan wire.NudgeResult, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		done <- s.Deliver(ctx, wire.NudgeRequest{ID: "n1", Mode: wire.NudgeWaitIdle}, "after the tool", nil)
	}()
	// The window opens after Deliver's first look at the pane.
	for deadline := time.Now().Add(10 * time.Second); countLines(t, calls) <= started; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("Deliver never looked at the pane")
		}
	}
	before := countLines(t, calls)
	time.Sleep(1500 * time.Millisecond)
	if looks := countLines(t, calls) - before; looks > 2 {
		t.Errorf("%d tmux calls in 1.5 s while the hooks said busy (Poll 50 ms), want at most 2", looks)
	}
	stopped := time.Now()
	if err := hooks.Record(HookStop); err != nil {
		t.Fatal(err)
	}
	for {
		if text, _ := srv.History(context.Background(), "polecat", 10); strings.Contains(text, "after the tool") {
			break
		}
		if time.Since(stopped) > 10*time.Second {
			t.Fatal("not typed 10 s after the Stop hook")
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Claude Code takes the prompt: its hook is the submission's evidence.
	if err := hooks.Record(HookUserPromptSubmit); err != nil {
		t.Fatal(err)
	}
	select {
	case res := <-done:
		if res.Outcome != wire.NudgeSubmitted {
			t.Fatalf("outcome %+v, want submitted", res)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("no outcome 15 s after the Stop hook")
	}
}

// countLines is how many lines the file at path has (0 when missing).
func countLines(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return strings.Count(string(b), "\n")
}

// TestServeStreamByHostdClock: a nudge's deadline is hostd's time, and an
// agent whose clock is 30 minutes ahead of hostd's (a laptop's Docker VM
// after a sleep) still waits until it by hostd's clock, as reckoned from
// the tunnel's welcome: it used to judge the deadline passed and answer
// busy to every nudge, so none was ever typed.
func TestServeStreamByHostdClock(t *testing.T) {
	dir := t.TempDir()
	srv := promptPane(t, dir, "cat")
	s, err := New(Config{Session: "polecat", Tmux: srv, StateDir: dir, EnterTries: 1}, nil)
	if err != nil {
		t.Fatal(err)
	}

	ca := tunneltest.NewCA(t)
	sc := ca.ServerConfig(ca.Server(t))
	hostdNow := func() time.Time { return time.Now().Add(-30 * time.Minute) }
	sc.Now = hostdNow
	ln, err := tunnel.Listen("127.0.0.1:0", sc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	agentSide, err := tunnel.Dial(ctx, ln.Addr(), ca.ClientConfig(ca.Client(t, wire.Identity{Rig: "gastown", Name: "furiosa"})))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { agentSide.Close() })
	hostdSide, err := ln.Accept(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { hostdSide.Close() })
	if skew := time.Since(agentSide.PeerNow()); skew < 29*time.Minute || skew > 31*time.Minute {
		t.Fatalf("the agent reckons hostd %v behind, want 30 min", skew)
	}
	mux := tunnel.NewServeMux()
	mux.Handle(wire.KindNudge, s)
	tunneltest.Serve(t, agentSide, mux)

	const text = "by hostd's clock"
	st, err := hostdSide.OpenStream(ctx, wire.KindNudge, wire.NudgeRequest{ID: "n1", Mode: wire.NudgeImmediate, Deadline: hostdNow().Add(10 * time.Second), Size: len(text)})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Write([]byte(text)); err != nil {
		t.Fatal(err)
	}
	results := wire.NewNudgeResults(st)
	for {
		res, err := results.Next()
		if err != nil {
			t.Fatalf("no final answer: %v", err)
		}
		if res.Outcome != wire.NudgeBusy {
			break
		}
		if !strings.Contains(res.Detail, "typing") {
			t.Fatalf("busy: %q (the deadline judged by the agent's clock?)", res.Detail)
		}
	}
	if got, _ := srv.History(context.Background(), "polecat", 10); !strings.Contains(got, text) {
		t.Fatalf("not typed:\n%s", got)
	}
}

// TestServeStreamJoinsItsReader: ServeStream has answered and returned
// with nothing of it left running, though hostd keeps its side open (the
// read that hears hostd withdraw the nudge is ended, and waited for).
func TestServeStreamJoinsItsReader(t *testing.T) {
	dir := t.TempDir()
	s, err := New(Config{Session: "polecat", Tmux: tmux.Server{Args: []string{"-S", filepath.Join(dir, "no-server.sock")}}, StateDir: dir}, nil)
	if err != nil {
		t.Fatal(err)
	}
	agentSide, hostdSide := tunneltest.Pair(t, wire.Identity{Rig: "gastown", Name: "furiosa"})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	const text = "hello"
	st, err := hostdSide.OpenStream(ctx, wire.KindNudge, wire.NudgeRequest{ID: "n1", Mode: wire.NudgeImmediate, Deadline: time.Now().Add(time.Hour), Size: len(text)})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close() // only when the test ends
	if _, err := st.Write([]byte(text)); err != nil {
		t.Fatal(err)
	}
	accepted, err := agentSide.AcceptStream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer accepted.Close()
	r := <-partstest.Go(func() error { s.ServeStream(ctx, accepted); return nil })
	for _, g := range r.Left {
		t.Errorf("goroutine %d, started by ServeStream, still runs after it returned:\n%s", g.ID, g.Stack)
	}
	res, err := wire.NewNudgeResults(st).Next()
	if err != nil || res.Outcome != wire.NudgeFailed {
		t.Errorf("answer %+v, %v; want failed (no tmux server)", res, err)
	}
}
