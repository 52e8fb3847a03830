package liveness

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/polecat-sidecar/sidecar/agent/tmux"
)

// privateTmux is a tmux server of the test's own, killed at cleanup.
func privateTmux(t *testing.T) tmux.Server {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "tmux.sock")
	srv := tmux.Server{Args: []string{"-S", sock}}
	t.Cleanup(func() { _ = exec.Command("tmux", "-S", sock, "kill-server").Run() })
	return srv
}

// TestSandboxSessions: a session started in a sandbox runs in its
// directory with the environment handed to it (and no trace of it on its
// command line), its exit status comes back, a second start replaces a
// session still running, and a session killed from outside has no status.
func TestSandboxSessions(t *testing.T) {
	srv := privateTmux(t)
	ctx := context.Background()
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	tests := []struct {
		name    string
		command string
		env     []string
		want    int
		wantOut string
	}{
		{"exit status and environment", `echo "$SECRET $PWD" > out; exit 3`, []string{"SECRET=sekr1t x=y"}, 3, "sekr1t x=y " + dir + "\n"},
		{"success", `printf ok > out`, nil, 0, "ok"},
		{"killed by a signal", `kill -TERM $$`, nil, 128 + 15, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_ = os.Remove(out)
			if err := StartSession(ctx, srv, SessionSpec{Name: "polecat", Command: []string{"sh", "-c", tt.command}, Dir: dir, Env: tt.env}); err != nil {
				t.Fatal(err)
			}
			p, _, _ := srv.ReadPane(ctx, "polecat")
			if len(tt.env) > 0 && strings.Contains(p.Command, "sekr1t") {
				t.Errorf("the environment shows on the pane's command line: %q", p.Command)
			}
			code, err := WaitSession(ctx, srv, "polecat", "", 20*time.Millisecond)
			if err != nil || code != tt.want {
				t.Fatalf("WaitSession = %d, %v; want %d", code, err, tt.want)
			}
			if tt.wantOut != "" {
				if b, _ := os.ReadFile(out); string(b) != tt.wantOut {
					t.Errorf("the command wrote %q, want %q", b, tt.wantOut)
				}
			}
		})
	}

	t.Run("a new session replaces a running one", func(t *testing.T) {
		if err := StartSession(ctx, srv, SessionSpec{Name: "polecat", Command: []string{"sleep", "100"}}); err != nil {
			t.Fatal(err)
		}
		p, _, _ := srv.ReadPane(ctx, "polecat")
		if err := StartSession(ctx, srv, SessionSpec{Name: "polecat", Command: []string{"sh", "-c", "exit 5"}}); err != nil {
			t.Fatal(err)
		}
		if code, err := WaitSession(ctx, srv, "polecat", "", 20*time.Millisecond); err != nil || code != 5 {
			t.Fatalf("the second session: %d, %v; want 5", code, err)
		}
		for deadline := time.Now().Add(10 * time.Second); syscall.Kill(p.PID, 0) == nil; time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("the first session's process %d still runs", p.PID)
			}
		}
	})

	t.Run("killed from outside", func(t *testing.T) {
		if err := StartSession(ctx, srv, SessionSpec{Name: "polecat", Command: []string{"sleep", "100"}}); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() {
			code, err := WaitSession(ctx, srv, "polecat", "", 20*time.Millisecond)
			if err == nil && code != 128+int(syscall.SIGHUP) {
				err = fmt.Errorf("status %d", code)
			}
			done <- err
		}()
		if err := srv.Kill(ctx, "polecat"); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-done:
			// Either tmux ended session-run before it recorded the hangup's
			// status, or after.
			if !errors.Is(err, ErrSessionGone) && err != nil {
				t.Fatalf("WaitSession after the kill: %v, want ErrSessionGone or status %d", err, 128+int(syscall.SIGHUP))
			}
		case <-time.After(5 * time.Second):
			t.Fatal("WaitSession still waits after the session was killed")
		}
		if err := srv.Kill(ctx, "polecat"); err != nil {
			t.Errorf("killing a session that is gone: %v, want nil", err)
		}
	})
}

// TestSessionEnvironment: each session's variables are the tmux session's
// environment, for its command and for what later starts in the session
// and 'tmux show-environment', in place of the session before's: a value
// it changed is the new one, a variable it does not pass is gone, in a
// session that replaced a running one and in one started after the one
// before ended. A malformed variable is refused before tmux sees it.
func TestSessionEnvironment(t *testing.T) {
	srv := privateTmux(t)
	ctx := context.Background()
	dir := t.TempDir()
	sessionEnv := func() string {
		t.Helper()
		out, err := exec.Command("tmux", append(srv.Args, "show-environment", "-t", "=polecat:")...).Output()
		if err != nil {
			t.Fatal(err)
		}
		return string(out)
	}
	// run starts a session with env that records what it sees and waits,
	// and returns what it saw.
	run := func(env ...string) string {
		t.Helper()
		out := filepath.Join(dir, "out")
		_ = os.Remove(out)
		cmd := `printf '%s %s' "$GT_BRANCH" "${GT_RUN-none}" > out.tmp && mv out.tmp out; exec sleep 60`
		if err := StartSession(ctx, srv, SessionSpec{Name: "polecat", Command: []string{"sh", "-c", cmd}, Dir: dir, Env: env}); err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if b, err := os.ReadFile(out); err == nil {
				return string(b)
			}
		}
		t.Fatal("the session's command wrote nothing")
		return ""
	}
	if got := run("GT_BRANCH=polecat/nux-1", "GT_RUN=run-1"); got != "polecat/nux-1 run-1" {
		t.Fatalf("the first session saw %q", got)
	}
	if got := run("GT_BRANCH=polecat/nux-2"); got != "polecat/nux-2 none" {
		t.Errorf("the second session, replacing the first, saw %q; want its own branch and no GT_RUN", got)
	}
	if env := sessionEnv(); !strings.Contains(env, "GT_BRANCH=polecat/nux-2\n") || !strings.Contains(env, "-GT_RUN\n") {
		t.Errorf("tmux show-environment in the second session:\n%s", env)
	}
	if _, err := StopSession(ctx, srv, "polecat", ""); err != nil {
		t.Fatal(err)
	}
	if got := run("GT_BRANCH=polecat/nux-3"); got != "polecat/nux-3 none" {
		t.Errorf("the third session, after the second ended, saw %q; want its own branch and no GT_RUN", got)
	}
	for _, bad := range []string{"GT_BRANCH", "=x", "GT-RUN=1", "1GT=1", "A B=1"} {
		if err := StartSession(ctx, srv, SessionSpec{Name: "polecat", Command: []string{"true"}, Env: []string{bad}}); err == nil || !strings.Contains(err.Error(), "session variable") {
			t.Errorf("StartSession with the variable %q: %v, want it refused", bad, err)
		}
	}
}

// TestStopSession: stopping by tag ends the tagged session only, never
// the later one that replaced it (hostd run's old session ending while
// the new one starts after a respawn of Gas Town's pane); an untagged stop
// ends whatever runs; a malformed tag is refused before tmux sees it.
func TestStopSession(t *testing.T) {
	srv := privateTmux(t)
	ctx := context.Background()
	start := func(tag string) {
		t.Helper()
		if err := StartSession(ctx, srv, SessionSpec{Name: "polecat", Command: []string{"sleep", "100"}, Tag: tag}); err != nil {
			t.Fatal(err)
		}
	}
	running := func() bool {
		p, found, err := srv.ReadPane(ctx, "polecat")
		if err != nil {
			t.Fatal(err)
		}
		return found && !p.Dead
	}
	tests := []struct {
		name        string
		started     []string // tags, in order; the last one runs
		stop        string
		wantStopped bool
		wantErr     string
	}{
		{"its own tag", []string{"first"}, "first", true, ""},
		{"replaced by a later session", []string{"first", "second"}, "first", false, ""},
		{"the later session's tag", []string{"first", "second"}, "second", true, ""},
		{"no tag stops whatever runs", []string{"first"}, "", true, ""},
		{"no session", nil, "first", false, ""},
		{"tmux format in the tag", []string{"first"}, "x},#{session_name", false, "session tag"},
		{"too long", []string{"first"}, strings.Repeat("a", 65), false, "session tag"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_ = srv.Kill(ctx, "polecat")
			for _, tag := range tt.started {
				start(tag)
			}
			stopped, err := StopSession(ctx, srv, "polecat", tt.stop)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("StopSession(%q) = %v, want an error about %q", tt.stop, err, tt.wantErr)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if stopped != tt.wantStopped {
				t.Errorf("stopped = %v, want %v", stopped, tt.wantStopped)
			}
			if want := len(tt.started) > 0 && !tt.wantStopped; running() != want {
				t.Errorf("session running after the stop: %v, want %v", running(), want)
			}
		})
	}
	t.Run("a malformed tag does not start", func(t *testing.T) {
		if err := StartSession(ctx, srv, SessionSpec{Name: "polecat", Command: []string{"true"}, Tag: "a b"}); err == nil {
			t.Fatal("StartSession took the tag \"a b\"")
		}
	})
}

// TestTaggedSessions: a start asked for again with the tag of the session
// there (running, or ended with its status) leaves it as it is; waiting
// by tag gives the status of that session, and says when a later session
// with another tag has replaced it.
func TestTaggedSessions(t *testing.T) {
	srv := privateTmux(t)
	ctx := context.Background()
	start := func(tag, script string) {
		t.Helper()
		if err := StartSession(ctx, srv, SessionSpec{Name: "polecat", Command: []string{"sh", "-c", script}, Tag: tag}); err != nil {
			t.Fatal(err)
		}
	}
	start("one", "sleep 100")
	before, _, _ := srv.ReadPane(ctx, "polecat")
	start("one", "exit 9")
	if after, _, _ := srv.ReadPane(ctx, "polecat"); after.PID != before.PID || after.Dead {
		t.Fatalf("starting tag one again restarted it: pid %d, then %d (dead %v)", before.PID, after.PID, after.Dead)
	}
	waited := make(chan error, 1)
	go func() { _, err := WaitSession(ctx, srv, "polecat", "one", 20*time.Millisecond); waited <- err }()
	start("two", "exit 4")
	select {
	case err := <-waited:
		if !errors.Is(err, ErrSessionReplaced) {
			t.Fatalf("waiting for tag one once two replaced it: %v, want ErrSessionReplaced", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("waiting for tag one goes on after two replaced it")
	}
	if code, err := WaitSession(ctx, srv, "polecat", "two", 20*time.Millisecond); err != nil || code != 4 {
		t.Fatalf("waiting for two: %d, %v; want 4", code, err)
	}
	start("two", "exit 0") // ended, with its status: not started again
	if code, err := WaitSession(ctx, srv, "polecat", "two", 20*time.Millisecond); err != nil || code != 4 {
		t.Fatalf("waiting for two after a start asked for again: %d, %v; want its own 4", code, err)
	}
	if _, err := WaitSession(ctx, srv, "polecat", "one", 20*time.Millisecond); !errors.Is(err, ErrSessionReplaced) {
		t.Errorf("waiting for one, long replaced: %v, want ErrSessionReplaced", err)
	}
}
