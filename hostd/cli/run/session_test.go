package run

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestKeepLiveness: while the session runs, hostd run puts hostd back in
// its tmux session's GT_PROCESS_NAMES when Gas Town sets the variable
// after it (as SessionManager.Start does once the session exists), so
// Gas Town's zombie check keeps seeing the pane's hostd as the agent.
func TestKeepLiveness(t *testing.T) {
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("no tmux")
	}
	sock := filepath.Join(t.TempDir(), "tmux.sock")
	tmux := func(args ...string) string {
		t.Helper()
		out, err := exec.Command("tmux", append([]string{"-S", sock}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("tmux %v: %v: %s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	tmux("-f", "/dev/null", "new-session", "-d", "-s", "gt-toast", "sleep 60")
	t.Cleanup(func() { _ = exec.Command("tmux", "-S", sock, "kill-server").Run() })
	pane := tmux("display-message", "-p", "-t", "gt-toast", "#{pane_id}")
	t.Setenv("TMUX", sock+",1,0")
	t.Setenv("TMUX_PANE", pane)

	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() { keepLiveness(context.Background(), done, 20*time.Millisecond); close(stopped) }()
	tmux("set-environment", "-t", "gt-toast", "GT_PROCESS_NAMES", "node,claude") // Gas Town, after hostd run started
	want := "GT_PROCESS_NAMES=node,claude,hostd"
	for end := time.Now().Add(5 * time.Second); tmux("show-environment", "-t", "gt-toast", "GT_PROCESS_NAMES") != want; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("GT_PROCESS_NAMES still %q, want %q", tmux("show-environment", "-t", "gt-toast", "GT_PROCESS_NAMES"), want)
		}
	}
	close(done)
	<-stopped
}
