package e2e

import (
	"bufio"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestPeek: hostd peek shows the pane's last lines, as text and JSON, and
// --follow prints what the pane adds.
func TestPeek(t *testing.T) {
	t.Parallel()
	r := newNudgeRig(t, "plain", nil)
	r.tmuxRun(t, "send-keys", "-t", "=polecat:", "-l", "first line")
	r.tmuxRun(t, "send-keys", "-t", "=polecat:", "Enter")
	r.waitLines(t, 1, 5*time.Second)
	out := r.tw.Run("peek", "gastown/furiosa", "--lines", "5")
	if !strings.Contains(out, "> first line") {
		t.Fatalf("peek:\n%s", out)
	}
	var js struct {
		Polecat string   `json:"polecat"`
		Lines   []string `json:"lines"`
	}
	if err := json.Unmarshal([]byte(r.tw.Run("peek", "gastown/furiosa", "--lines", "5", "--json")), &js); err != nil || len(js.Lines) == 0 || len(js.Lines) > 5 {
		t.Fatalf("peek --json: %+v %v", js, err)
	}

	follow := exec.Command(filepath.Join(BinDir, "hostd"), "--town", r.tw.Dir, "peek", "gastown/furiosa", "--follow", "--lines", "3")
	stdout, _ := follow.StdoutPipe()
	if err := follow.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = follow.Process.Kill(); _ = follow.Wait() }()
	lines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	waitLine := func(text string) {
		t.Helper()
		deadline := time.After(15 * time.Second)
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatal("peek --follow ended")
				}
				if strings.Contains(l, text) {
					return
				}
			case <-deadline:
				t.Fatalf("peek --follow never showed %q", text)
			}
		}
	}
	waitLine("first line") // following: the pane's last lines come first
	r.tmuxRun(t, "send-keys", "-t", "=polecat:", "-l", "added while following")
	r.tmuxRun(t, "send-keys", "-t", "=polecat:", "Enter")
	waitLine("added while following")
}

// TestAttach: a host tmux session named as Gas Town names a polecat's runs
// hostd attach --rw: Gas Town's send-keys into it reaches the polecat and
// its capture-pane shows the polecat's screen; resizing it resizes the
// polecat's window. A read-only attach types nothing.
func TestAttach(t *testing.T) {
	t.Parallel()
	r := newNudgeRig(t, "plain", nil)
	host := TmuxSocket(t)
	hostTmux := func(args ...string) string {
		t.Helper()
		out, err := exec.Command("tmux", append([]string{"-S", host}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("host tmux %v: %v %s", args, err, out)
		}
		return string(out)
	}
	attachIn := func(session string, flags ...string) {
		t.Helper()
		argv := append([]string{filepath.Join(BinDir, "hostd"), "--town", r.tw.Dir, "attach", "gastown/furiosa"}, flags...)
		// exit-empty off: killing the first session must not end the server
		// while the second one's start-server races its exit ("server
		// exited unexpectedly").
		hostTmux(append([]string{"start-server", ";", "set-option", "-s", "exit-empty", "off", ";", "set-option", "-g", "remain-on-exit", "on", ";",
			"new-session", "-d", "-s", session, "-x", "120", "-y", "40", "--"}, argv...)...)
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			if strings.Contains(hostTmux("capture-pane", "-p", "-t", "="+session+":"), ">") { // the prompt (capture-pane trims its space)
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("the host pane never showed the polecat's prompt:\n%s", hostTmux("capture-pane", "-p", "-t", "="+session+":"))
			}
		}
	}
	attachIn("gt-gastown-furiosa", "--rw")
	hostTmux("send-keys", "-t", "=gt-gastown-furiosa:", "-l", "from gas town")
	hostTmux("send-keys", "-t", "=gt-gastown-furiosa:", "Enter")
	if got := r.waitLines(t, 1, 5*time.Second); got[0] != "from gas town" {
		t.Fatalf("the polecat received %q", got)
	}
	for deadline := time.Now().Add(5 * time.Second); !strings.Contains(hostTmux("capture-pane", "-p", "-t", "=gt-gastown-furiosa:"), "> from gas town"); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("capture-pane on the host never showed what was typed")
		}
	}
	hostTmux("resize-window", "-t", "=gt-gastown-furiosa:", "-x", "100", "-y", "30")
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		out, _ := exec.Command("tmux", "-S", r.tmux, "display-message", "-p", "-t", "=polecat:", "#{window_width}").Output()
		if strings.TrimSpace(string(out)) == "100" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the polecat's window is %s wide after the host pane went to 100", out)
		}
	}
	hostTmux("kill-session", "-t", "=gt-gastown-furiosa")

	attachIn("watcher")
	hostTmux("send-keys", "-t", "=watcher:", "-l", "read only")
	hostTmux("send-keys", "-t", "=watcher:", "Enter")
	time.Sleep(time.Second)
	if got := r.lines(t); len(got) != 1 {
		t.Fatalf("a read-only attach typed: %q", got)
	}
}
