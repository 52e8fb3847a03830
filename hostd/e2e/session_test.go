package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/polecat-sidecar/sidecar/heartbeat"
	"github.com/polecat-sidecar/sidecar/hostd/api"
	"github.com/polecat-sidecar/sidecar/tunnel/tunneltest"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// TestSandboxSessions is a sandbox's life as hostd run drives it in its
// container (gt-agent up --watch-session, then each session Gas Town
// starts asked for on the sandbox channel, through hostd's control
// socket), judged by hostd: the polecat is starting, not dead, until its
// first session; its command is the polecat's own (a stand-in claude),
// not gt-agent's wrapper; each session's tmux environment has its own
// GT_BRANCH and GT_RUN, not the first session's; a reconnect shows as
// one, not as stale, and the session outlives it, waited for on the next
// tunnel; and a session that ends is dead at once. No state change on
// the way says stale, nor dead before the end.
func TestSandboxSessions(t *testing.T) {
	t.Parallel()
	tw := NewTown(t)
	_, addr := tw.Serve("--beat-interval", beatEvery.String(), "--idle-timeout", "2s")
	relay := tunneltest.NewRelay(t, addr)
	nux := wire.Identity{Rig: "gastown", Name: "nux"}
	sock, bin, out := TmuxSocket(t), t.TempDir(), filepath.Join(t.TempDir(), "claude.out")
	// The stand-in claude says which session's variables it has.
	claude := "#!/bin/sh\nprintf '%s %s' \"$GT_BRANCH\" \"${GT_RUN-none}\" > " + out + ".tmp && mv " + out + ".tmp " + out + "\nexec sleep 300\n"
	if err := os.WriteFile(filepath.Join(bin, "claude"), []byte(claude), 0o755); err != nil {
		t.Fatal(err)
	}
	// The agent's tmux server runs the sessions, with the agent's PATH, in
	// the rig's clone in its work directory.
	work := t.TempDir()
	if err := os.Mkdir(filepath.Join(work, nux.Rig), 0o755); err != nil {
		t.Fatal(err)
	}
	Start(t, append(AgentEnv(relay.Addr, tw.Issue(nux.String(), time.Hour)), "PATH="+bin+":"+os.Getenv("PATH")), "gt-agent", "up",
		"--tmux-socket", sock, "--watch-session", "polecat", "--beat-interval", beatEvery.String(), "--work-dir", work)
	c := tw.Client()
	detail := func() api.PolecatDetail {
		t.Helper()
		d, err := c.Polecat(context.Background(), api.Identity(nux))
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	tw.WaitStatus(10*time.Second, func(st api.Status) bool {
		return InState("nux", "starting")(st) && strings.HasPrefix(st.Polecats[0].Reason, "no session yet")
	})

	// channel sends req on a new sandbox stream, and returns the answers.
	channel := func(req wire.SandboxRequest) *wire.SandboxAnswers {
		t.Helper()
		conn, err := c.Sandbox(context.Background(), api.Identity(nux), 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		if err := wire.WriteSandboxRequest(conn, req); err != nil {
			t.Fatal(err)
		}
		return wire.NewSandboxAnswers(conn)
	}
	answer := func(answers *wire.SandboxAnswers, want string) {
		t.Helper()
		if a, err := answers.Next(); err != nil || a.Status != want {
			t.Fatalf("the agent answered %+v, %v; want %s", a, err, want)
		}
	}
	// session starts what hostd run starts for one session, tagged tag,
	// with its GT_BRANCH and GT_RUN, and waits for its stand-in claude to
	// say what it has.
	session := func(tag, branch string, run ...string) string {
		t.Helper()
		_ = os.Remove(out)
		env := []string{"GT_BRANCH=" + branch}
		if len(run) > 0 {
			env = append(env, "GT_RUN="+run[0])
		}
		answer(channel(wire.SandboxRequest{Op: wire.SandboxSession, Tag: tag, Env: env, Command: []string{"claude", "--dangerously-skip-permissions"}}), wire.SandboxStarted)
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if b, err := os.ReadFile(out); err == nil {
				return string(b)
			}
		}
		t.Fatalf("the session of %s did not start claude", branch)
		return ""
	}
	sessionEnv := func() string {
		t.Helper()
		b, err := exec.Command("tmux", "-S", sock, "show-environment", "-t", "=polecat:").Output()
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}

	if got := session("one", "polecat/nux-1", "run-1"); got != "polecat/nux-1 run-1" {
		t.Fatalf("the first session's claude has %q", got)
	}
	st := tw.WaitStatus(10*time.Second, InState("nux", "working"))
	if p := st.Polecats[0]; p.Command != "claude --dangerously-skip-permissions" {
		t.Errorf("status shows the command %q, want the polecat's own", p.Command)
	}
	if table := tw.Run("status"); !strings.Contains(table, " claude --dangerously-skip-permissions\n") || strings.Contains(table, "session-run") {
		t.Errorf("the status table does not show the polecat's own command:\n%s", table)
	}
	if one := tw.Run("status", nux.String()); !strings.Contains(one, "\n  command:   claude --dangerously-skip-permissions\n") || strings.Contains(one, "session-run") {
		t.Errorf("the polecat's detail does not show its own command:\n%s", one)
	}
	if env := sessionEnv(); !strings.Contains(env, "GT_BRANCH=polecat/nux-1\n") || !strings.Contains(env, "GT_RUN=run-1\n") {
		t.Errorf("the first session's tmux environment:\n%s", env)
	}

	// The next session (a handoff) replaces it, with its own variables.
	if got := session("two", "polecat/nux-2"); got != "polecat/nux-2 none" {
		t.Errorf("the second session's claude has %q, want its own branch and no GT_RUN", got)
	}
	if env := sessionEnv(); !strings.Contains(env, "GT_BRANCH=polecat/nux-2\n") || !strings.Contains(env, "-GT_RUN\n") {
		t.Errorf("the second session's tmux environment:\n%s", env)
	}

	// The tunnel drops and comes back.
	relay.Cut(true)
	tw.WaitStatus(10*time.Second, InState("nux", "disconnected"))
	relay.Cut(false)
	tw.WaitStatus(20*time.Second, func(st api.Status) bool {
		return InState("nux", "working")(st) && st.Polecats[0].Connected
	})

	// The session outlived the tunnel's drop: waited for on the new one,
	// and ended by its tag, dead at once.
	waited := channel(wire.SandboxRequest{Op: wire.SandboxWait, Tag: "two"})
	answer(channel(wire.SandboxRequest{Op: wire.SandboxStop, Tag: "one"}), wire.SandboxGone)
	answer(channel(wire.SandboxRequest{Op: wire.SandboxStop, Tag: "two"}), wire.SandboxStopped)
	if a, err := waited.Next(); err != nil || a.Status != wire.SandboxGone && a.Status != wire.SandboxExited {
		t.Errorf("the wait for the stopped session: %+v, %v; want its end", a, err)
	}
	tw.WaitStatus(2*beatEvery+time.Second, func(st api.Status) bool {
		return InState("nux", "dead")(st) && st.Polecats[0].Reason == "session not found"
	})

	var got []string
	reconnected := false
	events := detail().Events
	for i, e := range events {
		// Beats stop with the cut, and hostd may see that before it
		// closes the tunnel: stale then is the truth.
		if e.To == string(heartbeat.Stale) && i+1 < len(events) && events[i+1].To == string(heartbeat.Disconnected) {
			continue
		}
		got = append(got, e.To)
		reconnected = reconnected || e.From == string(heartbeat.Disconnected) && e.To == string(heartbeat.Starting) && e.Reason == "reconnected, waiting for the first beat"
	}
	if want := []string{"starting", "working", "disconnected", "starting", "working", "dead"}; !slices.Equal(got, want) || !reconnected {
		t.Errorf("state changes %v, want %v (the reconnect said so)", got, want)
	}
}
