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
			status, err := StartSession(ctx, srv, SessionSpec{Name: "polecat", Command: []string{"sh", "-c", tt.command}, Dir: dir, Env: tt.env})
			if err != nil {
				t.Fatal(err)
			}
			p, _, _ := srv.ReadPane(ctx, "polecat")
			if len(tt.env) > 0 && strings.Contains(p.Command, "sekr1t") {
				t.Errorf("the environment shows on the pane's command line: %q", p.Command)
			}
			code, err := WaitSession(ctx, srv, "polecat", status, 20*time.Millisecond)
			if err != nil || code != tt.want {
				t.Fatalf("WaitSession = %d, %v; want %d", code, err, tt.want)
			}
			if tt.wantOut != "" {
				if b, _ := os.ReadFile(out); string(b) != tt.wantOut {
					t.Errorf("the command wrote %q, want %q", b, tt.wantOut)
				}
			}
			if m, _ := filepath.Glob(status + ".env"); len(m) > 0 {
				t.Errorf("the environment's file was left behind: %v", m)
			}
		})
	}

	t.Run("a new session replaces a running one", func(t *testing.T) {
		first, err := StartSession(ctx, srv, SessionSpec{Name: "polecat", Command: []string{"sleep", "100"}})
		if err != nil {
			t.Fatal(err)
		}
		p, _, _ := srv.ReadPane(ctx, "polecat")
		second, err := StartSession(ctx, srv, SessionSpec{Name: "polecat", Command: []string{"sh", "-c", "exit 5"}})
		if err != nil {
			t.Fatal(err)
		}
		if code, err := WaitSession(ctx, srv, "polecat", second, 20*time.Millisecond); err != nil || code != 5 {
			t.Fatalf("the second session: %d, %v; want 5", code, err)
		}
		for deadline := time.Now().Add(2 * time.Second); syscall.Kill(p.PID, 0) == nil; time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("the first session's process %d (status %s) still runs", p.PID, first)
			}
		}
	})

	t.Run("killed from outside", func(t *testing.T) {
		status, err := StartSession(ctx, srv, SessionSpec{Name: "polecat", Command: []string{"sleep", "100"}})
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() {
			code, err := WaitSession(ctx, srv, "polecat", status, 20*time.Millisecond)
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
