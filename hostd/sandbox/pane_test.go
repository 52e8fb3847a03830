package sandbox

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// paneUnderTest is a tmux server of the test's own (killed at cleanup)
// with one pane that records each process it starts in pids, one line
// each, as hostd run's pane would be respawned.
func paneUnderTest(t *testing.T) (p Pane, pids string) {
	t.Helper()
	dir := t.TempDir()
	sock, pids := filepath.Join(dir, "tmux.sock"), filepath.Join(dir, "pids")
	t.Cleanup(func() { _ = exec.Command("tmux", "-S", sock, "kill-server").Run() })
	out, err := exec.Command("tmux", "-S", sock, "new-session", "-d", "-P", "-F", "#{pane_id}", "-s", "hq-toast",
		"sh -c 'echo $$ >> "+pids+"; exec sleep 100'").CombinedOutput()
	if err != nil {
		t.Fatalf("tmux new-session: %v: %s", err, out)
	}
	p = Pane{Socket: sock, ID: strings.TrimSpace(string(out)), PID: waitPID(t, pids, 1)}
	return p, pids
}

// waitPID waits for the n-th process the pane records and returns it.
func waitPID(t *testing.T, pids string, n int) int {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		b, _ := os.ReadFile(pids)
		if lines := strings.Fields(string(b)); len(lines) >= n {
			pid, _ := strconv.Atoi(lines[n-1])
			return pid
		}
	}
	t.Fatalf("the pane did not start process %d", n)
	return 0
}

// TestPanesRespawn: a relayed cycle respawns the recorded pane with the
// command it was started with, and only while the pane still runs the
// recorded process; never twice within RespawnCooldown, never for a
// polecat with no pane, and a later hostd run's record survives an
// earlier one's Forget.
func TestPanesRespawn(t *testing.T) {
	ctx, log := context.Background(), slog.New(slog.DiscardHandler)
	toast := wire.Identity{Rig: "gastown", Name: "toast"}
	tests := []struct {
		name    string
		record  func(p Pane) Pane // what hostd run recorded; nil: nothing
		wantErr string            // "" respawns
	}{
		{"respawned", func(p Pane) Pane { return p }, ""},
		{"no record", nil, ErrNoPane.Error()},
		{"the pane runs something else", func(p Pane) Pane { p.PID = 1; return p }, "no longer runs hostd run"},
		{"no such pane", func(p Pane) Pane { p.ID = "%99"; return p }, "finding the pane"},
		{"incomplete record", func(p Pane) Pane { p.Socket = ""; return p }, "incomplete"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, pids := paneUnderTest(t)
			panes := &Panes{Dir: t.TempDir()}
			if tt.record != nil {
				if err := panes.Record(toast, tt.record(p)); err != nil {
					t.Fatal(err)
				}
			}
			err := panes.Respawn(ctx, toast, log)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Respawn = %v, want an error with %q", err, tt.wantErr)
				}
				time.Sleep(200 * time.Millisecond)
				if b, _ := os.ReadFile(pids); len(strings.Fields(string(b))) != 1 {
					t.Fatalf("the pane was respawned: processes %q", b)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if pid := waitPID(t, pids, 2); pid == p.PID {
				t.Fatalf("the respawned pane runs the same process %d", pid)
			}
			if err := panes.Respawn(ctx, toast, log); err == nil || !strings.Contains(err.Error(), "at most once every") {
				t.Errorf("a second respawn at once: %v, want the cooldown's refusal", err)
			}
		})
	}

	t.Run("a record reached through a symlink out of the directory is not read", func(t *testing.T) {
		p, pids := paneUnderTest(t)
		outside := &Panes{Dir: t.TempDir()}
		if err := outside.Record(toast, p); err != nil {
			t.Fatal(err)
		}
		panes := &Panes{Dir: t.TempDir()}
		if err := os.Symlink(filepath.Join(outside.Dir, toast.Rig), filepath.Join(panes.Dir, toast.Rig)); err != nil {
			t.Fatal(err)
		}
		if err := panes.Respawn(ctx, toast, log); err == nil || errors.Is(err, ErrNoPane) {
			t.Fatalf("Respawn through the symlink = %v, want the escape refused", err)
		}
		time.Sleep(200 * time.Millisecond)
		if b, _ := os.ReadFile(pids); len(strings.Fields(string(b))) != 1 {
			t.Fatalf("the pane was respawned: processes %q", b)
		}
	})

	t.Run("forget keeps a later record", func(t *testing.T) {
		panes := &Panes{Dir: t.TempDir()}
		older, newer := Pane{Socket: "/s", ID: "%1", PID: 100}, Pane{Socket: "/s", ID: "%1", PID: 200}
		if err := panes.Record(toast, older); err != nil {
			t.Fatal(err)
		}
		if err := panes.Record(toast, newer); err != nil {
			t.Fatal(err)
		}
		panes.Forget(toast, older.PID)
		if got, err := panes.load(toast); err != nil || got != newer {
			t.Fatalf("after the older run's Forget: %+v, %v; want %+v", got, err, newer)
		}
		panes.Forget(toast, newer.PID)
		if _, err := panes.load(toast); !errors.Is(err, ErrNoPane) {
			t.Fatalf("after its own Forget: %v, want ErrNoPane", err)
		}
	})
}

// TestPaneFromEnv: the pane comes from tmux's own variables, and there is
// none outside tmux.
func TestPaneFromEnv(t *testing.T) {
	tests := []struct {
		tmux, pane string
		want       Pane
		ok         bool
	}{
		{"/tmp/tmux-0/gt-abc,123,0", "%4", Pane{Socket: "/tmp/tmux-0/gt-abc", ID: "%4", PID: os.Getpid()}, true},
		{"", "%4", Pane{}, false},
		{"/tmp/tmux-0/default,1,0", "", Pane{}, false},
		{"/tmp/tmux-0/default,1,0", "4", Pane{}, false},
	}
	for _, tt := range tests {
		env := map[string]string{"TMUX": tt.tmux, "TMUX_PANE": tt.pane}
		got, ok := PaneFromEnv(func(k string) string { return env[k] })
		if got != tt.want || ok != tt.ok {
			t.Errorf("PaneFromEnv(TMUX=%q TMUX_PANE=%q) = %+v, %v; want %+v, %v", tt.tmux, tt.pane, got, ok, tt.want, tt.ok)
		}
	}
}

// TestPanesPrune: the record of a hostd run that no longer runs goes, as
// does one that does not read; a running hostd run's record stays, and
// so does another polecat's.
func TestPanesPrune(t *testing.T) {
	toast, nux := wire.Identity{Rig: "gastown", Name: "toast"}, wire.Identity{Rig: "gastown", Name: "nux"}
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		record  func(ps *Panes) // toast's; nux's always runs
		removed bool
	}{
		{"none", func(*Panes) {}, false},
		{"its hostd run ended", func(ps *Panes) { record(t, ps, toast, gone.Process.Pid) }, true},
		{"its hostd run runs", func(ps *Panes) { record(t, ps, toast, os.Getpid()) }, false},
		{"unreadable", func(ps *Panes) {
			if err := os.WriteFile(filepath.Join(ps.Dir, "gastown", "toast.json"), []byte("{"), 0o600); err != nil {
				t.Fatal(err)
			}
		}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ps := &Panes{Dir: t.TempDir()}
			record(t, ps, nux, os.Getpid())
			tc.record(ps)
			removed, err := ps.Prune(toast)
			if want := filepath.Join(ps.Dir, "gastown", "toast.json"); (removed == want) != tc.removed || (!tc.removed && removed != "") || err != nil {
				t.Fatalf("Prune: %q, %v; want removed %v", removed, err, tc.removed)
			}
			if _, err := ps.load(toast); errors.Is(err, ErrNoPane) != (tc.removed || tc.name == "none") {
				t.Errorf("toast's record after Prune: %v", err)
			}
			if _, err := ps.load(nux); err != nil {
				t.Errorf("nux's record went with toast's: %v", err)
			}
		})
	}
}

// record saves a pane record of process pid for id.
func record(t *testing.T, ps *Panes, id wire.Identity, pid int) {
	t.Helper()
	if err := ps.Record(id, Pane{Socket: "/tmp/tmux-sock", ID: "%1", PID: pid}); err != nil {
		t.Fatal(err)
	}
}
