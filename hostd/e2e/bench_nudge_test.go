package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// BenchmarkNudge: an immediate nudge, from the start of the hostd nudge
// command to the line submitted in the polecat's pane (the pane program
// records it), beside a local tmux send-keys of the same text and Enter
// into a local pane running the same program:
//
//	impl=ours   hostd nudge --mode immediate, through the tunnel and the agent
//	impl=local  tmux send-keys -l TEXT; tmux send-keys Enter, on this machine
func BenchmarkNudge(b *testing.B) {
	r := newNudgeRig(b, "plain", nil)
	hostd := filepath.Join(BinDir, "hostd")
	b.Run("impl=ours", func(b *testing.B) {
		n := 0
		for b.Loop() {
			n++
			text := fmt.Sprintf("ours %d", n)
			if out, err := exec.Command(hostd, "--town", r.tw.Dir, "nudge", "gastown/furiosa", "--mode", "immediate", text).CombinedOutput(); err != nil {
				b.Fatalf("%v %s", err, out)
			}
			waitLog(b, r.log, text)
		}
	})
	b.Run("impl=local", func(b *testing.B) {
		dir := b.TempDir()
		sock, log := filepath.Join(dir, "tmux.sock"), filepath.Join(dir, "pane.log")
		b.Cleanup(func() { _ = exec.Command("tmux", "-S", sock, "kill-server").Run() })
		self, _ := os.Executable()
		if out, err := exec.Command("tmux", "-S", sock, "new-session", "-d", "-s", "local", "-x", "200", "-y", "50", "--",
			"env", PaneEnv+"=plain", PaneLogEnv+"="+log, self).CombinedOutput(); err != nil {
			b.Fatalf("%v %s", err, out)
		}
		eventually(b, 10*time.Second, "the pane program's prompt", func() bool {
			out, _ := exec.Command("tmux", "-S", sock, "capture-pane", "-p", "-t", "=local:").Output()
			return strings.Contains(string(out), ">")
		})
		n := 0
		for b.Loop() {
			n++
			text := fmt.Sprintf("local %d", n)
			if out, err := exec.Command("tmux", "-S", sock, "send-keys", "-t", "=local:", "-l", text).CombinedOutput(); err != nil {
				b.Fatalf("%v %s", err, out)
			}
			if out, err := exec.Command("tmux", "-S", sock, "send-keys", "-t", "=local:", "Enter").CombinedOutput(); err != nil {
				b.Fatalf("%v %s", err, out)
			}
			waitLog(b, log, text)
		}
	})
}

// waitLog waits until the pane program has recorded text as a line.
func waitLog(b *testing.B, log, text string) {
	want := fmt.Sprintf("{\"line\":%q}", text)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(500 * time.Microsecond) {
		if data, _ := os.ReadFile(log); strings.Contains(string(data), want) {
			return
		}
	}
	b.Fatalf("%q never reached the pane", text)
}
