package liveness

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/polecat-sidecar/sidecar/heartbeat"
)

// TestStartDefaults: Start takes zero Config fields from DefaultConfig and
// keeps those given.
func TestStartDefaults(t *testing.T) {
	quiet := slog.New(slog.DiscardHandler)
	tests := []struct {
		name             string
		cfg              Config
		session, workDir string
	}{
		{"zero", Config{Logger: quiet}, DefaultSession, "."},
		{"given", Config{Name: "crew", WorkDir: "/tmp", Logger: quiet}, "crew", "/tmp"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, err := Start(context.Background(), tt.cfg)
			if err != nil {
				t.Fatal(err)
			}
			if w.cfg.Name != tt.session || w.cfg.WorkDir != tt.workDir || w.log != quiet {
				t.Fatalf("Name %q, WorkDir %q; want %q, %q and the given logger", w.cfg.Name, w.cfg.WorkDir, tt.session, tt.workDir)
			}
		})
	}
}

// TestExitReason: a session whose command could not be run (exit 127 or
// 126, from the session wrapper or a shell) is measured exited with the
// pane's last line saying why, in the beat and the agent's log; another
// exit carries no reason.
func TestExitReason(t *testing.T) {
	notExec := filepath.Join(t.TempDir(), "claude")
	if err := os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		command []string
		code    int
		reason  string // the beat's ExitReason contains it; "" wants none
	}{
		{"not found", []string{"no-such-claude", "--dangerously-skip-permissions"}, 127, "gt-agent: command not found: no-such-claude"},
		{"not found by a shell", []string{"sh", "-c", "echo starting; no-such-claude"}, 127, "no-such-claude: not found"},
		{"missing path", []string{"/nonexistent/claude"}, 127, "gt-agent: command not found: /nonexistent/claude"},
		{"not executable", []string{notExec}, 126, "gt-agent: cannot run " + notExec},
		{"another exit", []string{"sh", "-c", "echo last words; exit 3"}, 3, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := privateTmux(t)
			var log bytes.Buffer
			w, err := Start(context.Background(), Config{Command: tt.command, TmuxArgs: srv.Args, Logger: slog.New(slog.NewTextHandler(&log, nil))})
			if err != nil {
				t.Fatal(err)
			}
			// tmux can show the pane dead before its status and last
			// line are there to read; each beat reads them again.
			var s heartbeat.Session
			for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
				if s = w.Measure(context.Background(), time.Now()); s.State == heartbeat.SessionExited && s.ExitCode != nil &&
					*s.ExitCode == tt.code && (tt.reason == "" || s.ExitReason != "") {
					break
				}
			}
			if s.State != heartbeat.SessionExited || s.ExitCode == nil || *s.ExitCode != tt.code {
				t.Fatalf("session %+v, want exited with code %d", s, tt.code)
			}
			if tt.reason == "" && s.ExitReason != "" || !strings.Contains(s.ExitReason, tt.reason) {
				t.Errorf("exit reason %q, want %q", s.ExitReason, tt.reason)
			}
			if tt.reason != "" && !strings.Contains(log.String(), "exit_reason=") {
				t.Errorf("the log does not give the exit reason:\n%s", log.String())
			}
		})
	}
}

// TestLastLine: the last line of a dead pane that is not blank nor tmux's
// notice, cut to MaxExitReason bytes of valid UTF-8.
func TestLastLine(t *testing.T) {
	long := strings.Repeat("é", heartbeat.MaxExitReason)
	for _, tt := range []struct{ text, want string }{
		{"starting\nbash: claude: command not found\n\n\nPane is dead (status 127, Mon Jan  1 00:00:00 2026)\n", "bash: claude: command not found"},
		{"  only line  ", "only line"},
		{"\n\n", ""},
		{long, long[:heartbeat.MaxExitReason]},
		{"x" + long, "x" + long[:heartbeat.MaxExitReason-2]},
	} {
		if got := lastLine(tt.text); got != tt.want {
			t.Errorf("lastLine(%.40q) = %.40q, want %.40q", tt.text, got, tt.want)
		}
	}
}

// TestWatchSandbox: watching a sandbox's session, the beats say the
// polecat's own command, not gt-agent's wrapper around it (cut to
// heartbeat.MaxCommand bytes; a long one starts), and tell a session not started yet, before
// the sandbox's first, from one that is gone after running, also for an
// agent restarted since (StartedMark).
func TestWatchSandbox(t *testing.T) {
	srv := privateTmux(t)
	ctx := context.Background()
	mark := filepath.Join(t.TempDir(), "session-started")
	watch := func() *Watcher {
		t.Helper()
		w, err := Start(ctx, Config{WatchSession: "polecat", TmuxArgs: srv.Args, StartedMark: mark, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	measure := func(w *Watcher, state string) heartbeat.Session {
		t.Helper()
		var s heartbeat.Session
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if s = w.Measure(ctx, time.Now()); s.State == state {
				return s
			}
		}
		t.Fatalf("session %+v, want %s", s, state)
		return s
	}
	w := watch()
	if s := measure(w, heartbeat.SessionNotFound); !s.NeverStarted {
		t.Errorf("before the first session: %+v, want not started yet", s)
	}
	if err := StartSession(ctx, srv, SessionSpec{Name: "polecat", Command: []string{"sh", "-c", "exec sleep 60", "--dangerously-skip-permissions"}, Env: []string{"GT_BRANCH=b"}}); err != nil {
		t.Fatal(err)
	}
	if s := measure(w, heartbeat.SessionRunning); s.Command != "sh -c exec sleep 60 --dangerously-skip-permissions" || s.NeverStarted {
		t.Errorf("the first session: %+v, want the polecat's command", s)
	}
	// 10 KB: Gas Town's command carries a prompt, and tmux takes at most
	// 16 KiB in one call (the command and what the beats show of it).
	long := strings.Repeat("é", 5000)
	if err := StartSession(ctx, srv, SessionSpec{Name: "polecat", Command: []string{"sh", "-c", "exec sleep 60", long}}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		s := measure(w, heartbeat.SessionRunning)
		if strings.HasPrefix(s.Command, "sh -c exec sleep 60 éé") {
			if len(s.Command) > heartbeat.MaxCommand || !utf8.ValidString(s.Command) {
				t.Errorf("a long command: %d bytes, valid UTF-8 %v; want at most %d, valid", len(s.Command), utf8.ValidString(s.Command), heartbeat.MaxCommand)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the second session's command: %.60q", s.Command)
		}
	}
	if _, err := StopSession(ctx, srv, "polecat", ""); err != nil {
		t.Fatal(err)
	}
	if s := measure(w, heartbeat.SessionNotFound); s.NeverStarted {
		t.Errorf("after a session ended: %+v, want not found, and not 'not started yet'", s)
	}
	if s := measure(watch(), heartbeat.SessionNotFound); s.NeverStarted {
		t.Errorf("a restarted agent, after a session ended: %+v, want not 'not started yet'", s)
	}
}
