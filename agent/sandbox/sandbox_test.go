package sandbox

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/polecat-sidecar/sidecar/agent/tmux"
	"github.com/polecat-sidecar/sidecar/internal/settings/settingstest"
	"github.com/polecat-sidecar/sidecar/tunnel"
	"github.com/polecat-sidecar/sidecar/tunnel/tunneltest"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

var toast = wire.Identity{Rig: "gastown", Name: "toast"}

// fixture is an agent's sandbox service on a real tunnel, with a tmux
// server of its own, whose git port is git http-backend serving the rig's
// repository (hostd's git service stands behind the real port; hostd/e2e
// runs that path), and a worktree of that repository to change the rig.
type fixture struct {
	host *tunnel.Session
	tmux tmux.Server
	work string // the agent's work directory
	rig  string // a worktree of the rig's repository, on main
	repo string // the rig's repository
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	t.Setenv("HOME", t.TempDir()) // no git identity but the one prepare sets
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	root := t.TempDir()
	f := &fixture{work: t.TempDir(), rig: filepath.Join(t.TempDir(), "rig"), repo: filepath.Join(root, "v1", "git", toast.Rig)}
	f.git(t, "", "init", "-q", "--bare", "-b", "main", f.repo)
	f.git(t, "", "clone", "-q", f.repo, f.rig)
	f.git(t, f.rig, "commit", "-q", "--allow-empty", "-m", "first")
	f.git(t, f.rig, "push", "-q", "origin", "main")
	gitPath, err := exec.LookPath("git")
	if err != nil {
		t.Skip("no git")
	}
	backend := httptest.NewServer(&cgi.Handler{Path: gitPath, Args: []string{"http-backend"}, Env: []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1"}})
	t.Cleanup(backend.Close)
	sock := []string{"-S", filepath.Join(t.TempDir(), "tmux.sock")}
	t.Cleanup(func() { _ = exec.Command("tmux", append(sock, "kill-server")...).Run() })
	f.tmux = tmux.Server{Args: sock}
	svc, err := New(Config{WorkDir: f.work, GitAddr: strings.TrimPrefix(backend.URL, "http://"), Tmux: f.tmux, Poll: 20 * time.Millisecond,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	agent, host := tunneltest.Pair(t, toast)
	mux := tunnel.NewServeMux()
	mux.Handle(wire.KindSandbox, svc)
	tunneltest.Serve(t, agent, mux)
	f.host = host
	return f
}

// git runs git in dir as the operator, failing the test if it fails.
func (f *fixture) git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	if dir != "" {
		args = append([]string{"-C", dir}, args...)
	}
	out, err := exec.Command("git", append([]string{"-c", "user.name=op", "-c", "user.email=op@example.com"}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v %s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// open opens a sandbox stream and writes req on it.
func (f *fixture) open(t *testing.T, req wire.SandboxRequest) (*tunnel.Stream, *wire.SandboxAnswers) {
	t.Helper()
	st, err := f.host.OpenStream(context.Background(), wire.KindSandbox, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	_ = st.SetDeadline(time.Now().Add(30 * time.Second))
	if err := wire.WriteSandboxRequest(st, req); err != nil {
		t.Fatal(err)
	}
	return st, wire.NewSandboxAnswers(st)
}

// do is every answer to req, up to the stream's end.
func (f *fixture) do(t *testing.T, req wire.SandboxRequest) []wire.SandboxAnswer {
	t.Helper()
	_, answers := f.open(t, req)
	var all []wire.SandboxAnswer
	for {
		a, err := answers.Next()
		if errors.Is(err, io.EOF) {
			return all
		}
		if err != nil {
			t.Fatalf("%s: answers %+v, then %v", req.Op, all, err)
		}
		all = append(all, a)
	}
}

// statuses are the statuses of answers, with an exit's code and a
// failure's error.
func statuses(answers []wire.SandboxAnswer) string {
	var s []string
	for _, a := range answers {
		switch a.Status {
		case wire.SandboxExited:
			s = append(s, a.Status+" "+string(rune('0'+a.Code)))
		case wire.SandboxFailed:
			s = append(s, a.Status+": "+a.Error)
		default:
			s = append(s, a.Status)
		}
	}
	return strings.Join(s, ", ")
}

// TestSession: a session runs in the clone (none without one) with the
// variables hostd sends (none on its command line) and its command mapped
// to the container, and its exit status comes back after it started.
func TestSession(t *testing.T) {
	f := newFixture(t)
	dir := filepath.Join(f.work, toast.Rig)
	if got := statuses(f.do(t, wire.SandboxRequest{Op: wire.SandboxSession, Tag: "t0", Command: []string{"sh"}})); !strings.Contains(got, "failed: the session's directory, the rig's clone") {
		t.Errorf("a session with no clone: %s, want it refused", got)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	got := statuses(f.do(t, wire.SandboxRequest{Op: wire.SandboxSession, Tag: "t1", Env: []string{"SECRET=s3cr3t x"},
		Command: []string{"/no/such/dir/sh", "-c", `echo "$SECRET $PWD" > out; exit 3`}}))
	if got != "started, exited 3" {
		t.Fatalf("answers: %s; want started, exited 3", got)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "out")); string(b) != "s3cr3t x "+dir+"\n" {
		t.Errorf("the session wrote %q, want the variable and its clone", b)
	}
	if got := statuses(f.do(t, wire.SandboxRequest{Op: wire.SandboxSession, Tag: "t2", Command: []string{"sh"}, Env: []string{"A B=1"}})); !strings.Contains(got, "failed: starting the session: session variable") {
		t.Errorf("a malformed variable: %s, want the start refused", got)
	}
}

// TestSessionOutlivesItsStream: a session runs on when the stream that
// started it breaks (the tunnel reconnecting); the same start asked for
// again leaves it as it is; a wait on the next stream gives its end;
// waiting for a session that is not there, or that a later one replaced,
// says so at once; a stop ends only the session of its tag.
func TestSessionOutlivesItsStream(t *testing.T) {
	f := newFixture(t)
	if err := os.MkdirAll(filepath.Join(f.work, toast.Rig), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	running := func(tag string) wire.SandboxRequest {
		return wire.SandboxRequest{Op: wire.SandboxSession, Tag: tag, Command: []string{"sh", "-c", "while [ ! -e stop ]; do sleep 0.02; done; exit 5"}}
	}
	if got := statuses(f.do(t, wire.SandboxRequest{Op: wire.SandboxWait, Tag: "t1"})); got != "gone" {
		t.Fatalf("waiting with no session: %s, want gone", got)
	}
	st, answers := f.open(t, running("t1"))
	if a, err := answers.Next(); err != nil || a.Status != wire.SandboxStarted {
		t.Fatalf("%+v, %v; want started", a, err)
	}
	before, _, _ := f.tmux.ReadPane(ctx, "polecat")
	st.Close() // the tunnel broke
	st, answers = f.open(t, running("t1"))
	if a, err := answers.Next(); err != nil || a.Status != wire.SandboxStarted {
		t.Fatalf("the same start again: %+v, %v; want started", a, err)
	}
	st.Close()
	if p, _, _ := f.tmux.ReadPane(ctx, "polecat"); p.Dead || p.PID != before.PID {
		t.Fatalf("the session after its streams broke: pid %d (dead %v), was %d", p.PID, p.Dead, before.PID)
	}
	_, answers = f.open(t, wire.SandboxRequest{Op: wire.SandboxWait, Tag: "t1"})
	if err := os.WriteFile(filepath.Join(f.work, toast.Rig, "stop"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if a, err := answers.Next(); err != nil || a.Status != wire.SandboxExited || a.Code != 5 {
		t.Fatalf("waiting on the next stream: %+v, %v; want exited 5", a, err)
	}
	_ = os.Remove(filepath.Join(f.work, toast.Rig, "stop"))

	st, answers = f.open(t, running("t2"))
	if a, err := answers.Next(); err != nil || a.Status != wire.SandboxStarted {
		t.Fatalf("%+v, %v; want started", a, err)
	}
	defer st.Close()
	for _, c := range []struct{ op, tag, want string }{
		{wire.SandboxWait, "t1", "replaced"},
		{wire.SandboxStop, "t1", "gone"},
		{wire.SandboxStop, "t2", "stopped"},
		{wire.SandboxStop, "t2", "gone"},
	} {
		if got := statuses(f.do(t, wire.SandboxRequest{Op: c.op, Tag: c.tag})); got != c.want {
			t.Errorf("%s %s: %s, want %s", c.op, c.tag, got, c.want)
		}
	}
	// tmux's hangup ends the session's wrapper before it records the
	// status, or after.
	if a, err := answers.Next(); err != nil || a.Status != wire.SandboxGone && (a.Status != wire.SandboxExited || a.Code != 128+1) {
		t.Errorf("the stopped session's own stream: %+v, %v; want gone, or exited 129", a, err)
	}
}

// TestRefused: a request the agent cannot act on is refused with why.
func TestRefused(t *testing.T) {
	f := newFixture(t)
	for _, c := range []struct {
		name, in, want string
	}{
		{"unknown operation", `{"op":"exec","tag":"t"}`, "unknown operation"},
		{"no tag", `{"op":"stop"}`, "needs the session's tag"},
		{"not JSON", "\x1b[31m", "reading the sandbox request"},
	} {
		st, err := f.host.OpenStream(context.Background(), wire.KindSandbox, nil)
		if err != nil {
			t.Fatal(err)
		}
		_ = st.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := st.Write([]byte(c.in + "\n")); err != nil {
			t.Fatal(err)
		}
		_, err = io.ReadAll(st)
		st.Close()
		if _, ok := errors.AsType[*wire.RemoteError](err); !ok || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want a refusal saying %q", c.name, err, c.want)
		}
	}
}

// TestConfig: each setting out of range is named.
func TestConfig(t *testing.T) {
	settingstest.Run(t, DefaultConfig, Config.Validate, []settingstest.Case[Config]{
		{Name: "defaults"},
		{Name: "poll", Set: func(c *Config) { c.Poll = 0 }, Want: "Poll"},
		{Name: "session", Set: func(c *Config) { c.Session = "" }, Want: "Session"},
	})
}
