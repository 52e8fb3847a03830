package tmux

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestReadPane(t *testing.T) {
	sock := []string{"-S", filepath.Join(t.TempDir(), "tmux.sock")}
	srv := Server{Args: sock}
	t.Cleanup(func() { _ = exec.Command("tmux", append(sock, "kill-server")...).Run() })
	if _, found, err := srv.ReadPane(context.Background(), "none"); err != nil || found {
		t.Fatalf("no server: found=%v err=%v", found, err)
	}
	run := func(args ...string) {
		if out, err := exec.Command("tmux", append(sock, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("tmux %v: %v %s", args, err, out)
		}
	}
	if err := srv.NewSession(context.Background(), "polecat", []string{"sh", "-c", "echo started; read x; exit 7"}, map[string]string{"@status": "/tmp/a b"}); err != nil {
		t.Fatal(err)
	}
	p, found, err := srv.ReadPane(context.Background(), "polecat")
	if err != nil || !found || p.PID <= 0 || p.Dead || !strings.Contains(p.Command, "exit 7") {
		t.Fatalf("running pane: %+v found=%v err=%v", p, found, err)
	}
	if time.Since(p.Activity) > 5*time.Second {
		t.Errorf("activity %v ago", time.Since(p.Activity))
	}
	if _, found, _ := srv.ReadPane(context.Background(), "polecat2"); found {
		t.Error("a session name prefix matched another session")
	}
	run("send-keys", "-t", "=polecat:", "go", "Enter")
	for range 100 {
		if p, _, _ = srv.ReadPane(context.Background(), "polecat"); p.Dead && p.ExitCode != nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	// tmux's exit status is best effort (under load it can show a pane dead
	// and never say why; gt-agent records the status itself): unknown is
	// acceptable, wrong is not.
	if !p.Dead || (p.ExitCode != nil && *p.ExitCode != 7) {
		t.Fatalf("after exit: %+v", p)
	}
	if v, err := srv.Option(context.Background(), "polecat", "@status"); err != nil || v != "/tmp/a b" {
		t.Errorf("session option: %q, %v", v, err)
	}
	if v, err := srv.Option(context.Background(), "polecat", "@unset"); err != nil || v != "" {
		t.Errorf("unset option: %q, %v", v, err)
	}

	// A dead pane is respawned in place, with new options.
	if err := srv.Respawn(context.Background(), "polecat", []string{"sh", "-c", "read x"}, map[string]string{"@status": "/tmp/c"}); err != nil {
		t.Fatal(err)
	}
	p, found, err = srv.ReadPane(context.Background(), "polecat")
	if err != nil || !found || p.Dead || !strings.Contains(p.Command, "read x") {
		t.Fatalf("respawned pane: %+v found=%v err=%v", p, found, err)
	}
	if v, _ := srv.Option(context.Background(), "polecat", "@status"); v != "/tmp/c" {
		t.Errorf("option after respawn: %q", v)
	}
	if err := srv.NewSession(context.Background(), "polecat", []string{"true"}, nil); err == nil || !strings.Contains(err.Error(), "duplicate") {
		t.Errorf("second session of one name: %v", err)
	}
}
