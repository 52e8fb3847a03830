package e2e

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/polecat-sidecar/sidecar/hostd/api"
)

// nudgeRig is hostd and gastown/furiosa's agent, whose tmux session runs
// the pane program in a mode.
type nudgeRig struct {
	tw                  *Town
	hostd, agent        *Proc
	addr, tmux          string
	log, busy, stateDir string
	hooks               string // the agent's hook socket
	env, args           []string
}

// idleTimeout is the tunnels' idle timeout in tests where a killed agent
// or hostd must be noticed (shortIdle gives it to hostd and the agent
// alike): seconds, not the default ten.
const idleTimeout = 3 * time.Second

var shortIdle = []string{"--idle-timeout", idleTimeout.String()}

func newNudgeRig(t testing.TB, mode string, serve []string, agentFlags ...string) *nudgeRig {
	t.Helper()
	dir := t.TempDir()
	r := &nudgeRig{tw: NewTown(t), tmux: TmuxSocket(t), log: filepath.Join(dir, "pane.log"),
		busy: filepath.Join(dir, "busy"), stateDir: filepath.Join(dir, "state"), hooks: filepath.Join(dir, "hooks.sock")}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	r.hostd, r.addr = r.tw.Serve(serve...)
	r.env = AgentEnv(r.addr, r.tw.Issue("gastown/furiosa", time.Hour))
	r.args = append(append([]string{"up", "--tmux-socket", r.tmux, "--state-dir", r.stateDir, "--hook-socket", r.hooks, "--sync-checkpoint", "-1s"}, agentFlags...),
		"--", "env", PaneEnv+"="+mode, PaneLogEnv+"="+r.log, PaneBusyEnv+"="+r.busy, self)
	r.agent = Start(t, r.env, "gt-agent", r.args...)
	r.tw.WaitStatus(10*time.Second, InState("furiosa", "working"))
	return r
}

// nudge runs hostd nudge with text on standard input and returns its
// outcome and exit status.
func (r *nudgeRig) nudge(t *testing.T, text string, flags ...string) (api.NudgeOutcome, int) {
	t.Helper()
	cmd := exec.Command(filepath.Join(BinDir, "hostd"), append([]string{"--town", r.tw.Dir, "nudge", "gastown/furiosa", "--json"}, flags...)...)
	cmd.Stdin = strings.NewReader(text)
	out, err := cmd.Output()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	var o api.NudgeOutcome
	if err := json.Unmarshal(out, &o); err != nil {
		t.Fatalf("hostd nudge said %q (exit %d): %v", out, code, err)
	}
	return o, code
}

// records is what the pane program has received so far.
func (r *nudgeRig) records(t *testing.T) []PaneRecord {
	t.Helper()
	f, err := os.Open(r.log)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var recs []PaneRecord
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var rec PaneRecord
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatal(err)
		}
		recs = append(recs, rec)
	}
	return recs
}

// lines is the submitted lines.
func (r *nudgeRig) lines(t *testing.T) []string {
	var out []string
	for _, rec := range r.records(t) {
		out = append(out, rec.Line)
	}
	return out
}

// waitLines waits until n lines were submitted.
func (r *nudgeRig) waitLines(t *testing.T, n int, d time.Duration) []string {
	t.Helper()
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if l := r.lines(t); len(l) >= n {
			return l
		}
	}
	t.Fatalf("%d line(s) submitted after %v, want %d: %q", len(r.lines(t)), d, n, r.lines(t))
	return nil
}

// screen is what the rig's pane shows.
func (r *nudgeRig) screen() string {
	out, _ := exec.Command("tmux", "-S", r.tmux, "capture-pane", "-p", "-t", "=polecat:").Output()
	return string(out)
}

// waitScreen waits until the rig's pane shows text.
func (r *nudgeRig) waitScreen(t *testing.T, text string) {
	t.Helper()
	eventually(t, 15*time.Second, fmt.Sprintf("the pane showing %q", text), func() bool { return strings.Contains(r.screen(), text) })
}

// tmuxRun runs a tmux command on the rig's server.
func (r *nudgeRig) tmuxRun(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command("tmux", append([]string{"-S", r.tmux}, args...)...).CombinedOutput(); err != nil {
		t.Fatalf("tmux %v: %v %s", args, err, out)
	}
}

// TestNudgeExactText: every kind of text a shell or tmux mangles arrives
// exactly, once, and is submitted; escape sequences are stripped.
func TestNudgeExactText(t *testing.T) {
	r := newNudgeRig(t, "plain", nil)
	ten := strings.Repeat("0123456789", 1024)
	cases := []struct {
		name, text string
		want       []string
	}{
		{"ordinary", "please rebase on main", []string{"please rebase on main"}},
		{"quotes and substitutions", "it's \"done\"; run `make` and $(whoami) or ${HOME} \\n", []string{"it's \"done\"; run `make` and $(whoami) or ${HOME} \\n"}},
		{"trailing semicolon", "stop here;", []string{"stop here;"}},
		{"leading dash", "-n is not a flag", []string{"-n is not a flag"}},
		{"512-byte boundary on a dash", strings.Repeat("x", 512) + "-y", []string{strings.Repeat("x", 512) + "-y"}},
		{"unicode", "héllo ❯ 日本語 🚀 ✳", []string{"héllo ❯ 日本語 🚀 ✳"}},
		{"10 KB", ten, []string{ten}},
		{"embedded newlines", "first\nsecond\nthird", []string{"first", "second", "third"}},
		{"escape sequences", "red \x1b[31mRED\x1b[0m, clipboard \x1b]52;c;aGk=\x07set, tab\there", []string{"red RED, clipboard set, tab here"}},
	}
	var want []string
	for _, tc := range cases {
		o, code := r.nudge(t, tc.text)
		if o.Outcome != "submitted" || code != 0 {
			t.Fatalf("%s: %+v (exit %d)", tc.name, o, code)
		}
		want = append(want, tc.want...)
		got := r.waitLines(t, len(want), 5*time.Second)
		if !slices.Equal(got, want) {
			t.Fatalf("%s: the pane received %q, want %q", tc.name, got[len(got)-len(tc.want):], tc.want)
		}
	}
	time.Sleep(500 * time.Millisecond) // nothing more arrives
	if got := r.lines(t); len(got) != len(want) {
		t.Errorf("%d lines arrived, want %d: a nudge was typed twice or Enter pressed on an empty line", len(got), len(want))
	}
}

// TestNudgeClaudeBracketedPaste: into an application that asked for
// bracketed paste, a nudge is pasted bracketed, its newlines stay in the
// one prompt, and it is submitted once.
func TestNudgeClaudeBracketedPaste(t *testing.T) {
	r := newNudgeRig(t, "claude", nil)
	o, code := r.nudge(t, "line one\nline two; -x")
	if o.Outcome != "submitted" || code != 0 {
		t.Fatalf("%+v (exit %d)", o, code)
	}
	recs := r.records(t)
	if len(recs) != 1 || recs[0].Line != "line one\nline two; -x" || !recs[0].Bracketed {
		t.Fatalf("the pane received %+v", recs)
	}
}

// TestNudgeWaitIdle: a wait-idle nudge waits while each idle signal says
// busy (Claude Code's hooks, its spinner on the screen, a pane that keeps
// printing, text in the input line) and is delivered once it clears.
func TestNudgeWaitIdle(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, mode string
		busy, idle func(t *testing.T, r *nudgeRig)
	}{
		{"hooks", "plain",
			func(t *testing.T, r *nudgeRig) { hook(t, r.hooks, "UserPromptSubmit") },
			func(t *testing.T, r *nudgeRig) { hook(t, r.hooks, "Stop") }},
		{"screen", "claude",
			func(t *testing.T, r *nudgeRig) {
				_ = os.WriteFile(r.busy, nil, 0o644)
				r.waitScreen(t, "esc to interrupt")
			},
			func(t *testing.T, r *nudgeRig) { _ = os.Remove(r.busy) }},
		{"silence", "chatty",
			func(t *testing.T, r *nudgeRig) {
				_ = os.WriteFile(r.busy, nil, 0o644)
				r.waitScreen(t, "output 1")
			},
			func(t *testing.T, r *nudgeRig) { _ = os.Remove(r.busy) }},
		{"typing", "plain",
			func(t *testing.T, r *nudgeRig) {
				r.tmuxRun(t, "send-keys", "-t", "=polecat:", "-l", "half typed")
				r.waitScreen(t, "> half typed")
			},
			func(t *testing.T, r *nudgeRig) { r.tmuxRun(t, "send-keys", "-t", "=polecat:", "C-u") }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newNudgeRig(t, tc.mode, nil, "--nudge-silence", "1s")
			tc.busy(t, r)
			o, code := r.nudge(t, "when you are free", "--wait", "2s")
			if o.Outcome != "queued" || code != 3 || o.Detail == "" {
				t.Fatalf("while busy: %+v (exit %d), want queued with why", o, code)
			}
			if got := r.lines(t); len(got) != 0 {
				t.Fatalf("typed while busy: %q", got)
			}
			t.Logf("held: %s", o.Detail)
			tc.idle(t, r)
			got := r.waitLines(t, 1, 10*time.Second)
			if got[0] != "when you are free" {
				t.Fatalf("delivered %q", got)
			}
			// The agent reports once it has seen the nudge submitted.
			for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
				items, _ := r.tw.Client().NudgeList(t.Context(), o.Polecat)
				if len(items) == 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("still queued after delivery: %+v", items)
				}
			}
		})
	}
}

// hook runs gt-agent hook EVENT against the agent's hook socket.
func hook(t *testing.T, socket, event string) {
	t.Helper()
	out, err := exec.Command(filepath.Join(BinDir, "gt-agent"), "hook", "--socket", socket, event).CombinedOutput()
	if err != nil || len(out) != 0 {
		t.Fatalf("gt-agent hook %s: %v %s", event, err, out)
	}
}

// TestNudgeSurvivesRestarts: a nudge queued while the agent is away is
// delivered once it is back; one accepted by a hostd that is then
// SIGKILLed is delivered by the next hostd; each exactly once.
func TestNudgeSurvivesRestarts(t *testing.T) {
	t.Parallel()
	r := newNudgeRig(t, "plain", shortIdle, shortIdle...)
	_ = r.agent.Cmd.Process.Kill()
	_ = r.agent.Exited(t, 5*time.Second)
	r.tw.WaitStatus(idleTimeout+5*time.Second, InState("furiosa", "disconnected")) // a killed agent says nothing: the idle timeout notices
	o, code := r.nudge(t, "while you were away", "--mode", "queue")
	if o.Outcome != "queued" || code != 3 {
		t.Fatalf("queued for a disconnected polecat: %+v (exit %d)", o, code)
	}
	r.agent = Start(t, r.env, "gt-agent", r.args...) // adopts the tmux session
	if got := r.waitLines(t, 1, 10*time.Second); got[0] != "while you were away" {
		t.Fatalf("after reconnection: %q", got)
	}

	// hostd dies right after accepting a nudge for a busy polecat.
	hook(t, r.hooks, "PreToolUse")
	o, _ = r.nudge(t, "after the crash", "--no-wait")
	_ = r.hostd.Cmd.Process.Kill()
	_ = r.hostd.Exited(t, 5*time.Second)
	r.hostd = Start(t, nil, "hostd", "--town", r.tw.Dir, "serve", "--listen", r.addr)
	r.tw.WaitStatus(15*time.Second, Connected("furiosa", ""))
	items, err := r.tw.Client().NudgeList(t.Context(), o.Polecat)
	if err != nil || len(items) != 1 || items[0].ID != o.ID {
		t.Fatalf("the queue after hostd's restart: %+v %v", items, err)
	}
	if st := r.tw.Run("status"); !strings.Contains(st, "nudges waiting: gastown/furiosa 1") {
		t.Errorf("hostd status does not show the waiting nudge:\n%s", st)
	}
	hook(t, r.hooks, "Stop")
	r.waitLines(t, 2, 15*time.Second)
	time.Sleep(time.Second) // and nothing typed twice after that
	if got := r.lines(t); !slices.Equal(got, []string{"while you were away", "after the crash"}) {
		t.Fatalf("the pane received %q", got)
	}
}

// TestNudgeAgentKilledWhileTyping: an agent killed after typing a nudge
// but before reporting it does not type it again when hostd offers it
// to the restarted agent; hostd reports it failed and says why.
func TestNudgeAgentKilledWhileTyping(t *testing.T) {
	t.Parallel()
	r := newNudgeRig(t, "stuck", shortIdle, shortIdle...) // never submits: the agent keeps pressing Enter
	done := make(chan api.NudgeOutcome, 1)
	go func() {
		o, _ := r.nudge(t, "only once please", "--wait", "30s")
		done <- o
	}()
	r.waitScreen(t, "only once please")
	_ = r.agent.Cmd.Process.Signal(syscall.SIGKILL)
	_ = r.agent.Exited(t, 5*time.Second)
	r.agent = Start(t, r.env, "gt-agent", r.args...)
	o := <-done
	if o.Outcome != "failed" || !strings.Contains(o.Detail, "not typed again") {
		t.Fatalf("outcome: %+v", o)
	}
	if out := r.screen(); strings.Count(out, "only once please") != 1 {
		t.Fatalf("typed %d times:\n%s", strings.Count(out, "only once please"), out)
	}
}

// TestNudgeExpiryAndDepth: nudges for a polecat that never comes (issued
// a certificate, never connected) expire after their TTL, and a full
// queue drops its oldest normal nudge, each reported as such.
func TestNudgeExpiryAndDepth(t *testing.T) {
	t.Parallel()
	tw := NewTown(t)
	tw.Issue("gastown/furiosa", time.Hour)
	tw.Serve("--nudge-depth", "2")
	run := func(flags ...string) (api.NudgeOutcome, int) {
		r := &nudgeRig{tw: tw}
		return r.nudge(t, "hello", flags...)
	}
	o, code := run("--ttl", "1s", "--wait", "10s")
	if o.Outcome != "expired" || code != 4 || !strings.Contains(o.Detail, "not connected") {
		t.Fatalf("expiry: %+v (exit %d)", o, code)
	}
	first, _ := run("--no-wait")
	run("--no-wait", "--priority", "urgent")
	third, code := run("--no-wait")
	if third.Outcome != "queued" || code != 3 || third.Dropped == nil || third.Dropped.ID != first.ID || third.Dropped.Outcome != "dropped" {
		t.Fatalf("a full queue: %+v (exit %d)", third, code)
	}
	if fourth, code := run("--priority", "urgent", "--no-wait"); code != 3 || fourth.Dropped == nil || fourth.Dropped.ID != third.ID {
		t.Fatalf("an urgent nudge into a full queue: %+v (exit %d)", fourth, code)
	}
	if out, err := tw.Try("nudge", "gastown/furiosa", "--no-wait", "again"); err == nil || !strings.Contains(out, "urgent") {
		t.Fatalf("a normal nudge into a queue of two urgent ones: %v %s", err, out)
	}
	list := tw.Run("nudge", "gastown/furiosa", "--list")
	if strings.Count(list, "urgent") != 2 {
		t.Errorf("the queue:\n%s", list)
	}
}
