//go:build e2e

package e2e

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/polecat-sidecar/sidecar/hostd/api"
	harness "github.com/polecat-sidecar/sidecar/hostd/e2e"
	"github.com/polecat-sidecar/sidecar/hostd/state"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// TestSandbox runs a polecat the way Gas Town's runtime.exec_wrapper does:
// its tmux pane on the host runs 'exec env GT_RIG=... GT_POLECAT=...
// hostd run -- <agent>'. The first session makes the container (the
// sandbox) and clones the rig on the polecat's branch; keys typed into the
// host pane (gt nudge) reach the session and its screen shows there (gt
// peek); killing the host session (gt handoff, a respawn) ends the session
// but keeps the container and its uncommitted work; the next session
// starts in it and hostd run exits with its status; removing the polecat's
// directory (gt polecat nuke) removes the container, revokes the polecat
// and forgets what hostd kept of it.
func TestSandbox(t *testing.T) {
	start := time.Now()
	r := newRig(t)
	summary.add("setup: network, firewall, hostd on the gateway", true, time.Since(start))
	const container = "gt-gastown-toast"
	_, _ = tryDocker("rm", "-f", "-v", container) // a run killed before its cleanup
	undo.push(func() { _, _ = tryDocker("rm", "-f", "-v", container) })

	// Gas Town's layout: the polecat's worktree of .repo.git on its branch.
	polecatDir := filepath.Join(r.git.Dir, "gastown", "polecats", "toast")
	r.git.Git(t, r.git.Repo, "worktree", "add", "-q", "-b", "polecat/toast-1", filepath.Join(polecatDir, "gastown"), "main")

	sock := harness.TmuxSocket(t)
	tmux := func(args ...string) (string, error) {
		out, err := exec.Command("tmux", append([]string{"-S", sock}, args...)...).CombinedOutput()
		return string(out), err
	}
	hostd := filepath.Join(harness.BinDir, "hostd")
	runLog := filepath.Join(t.TempDir(), "hostd-run.log") // hostd run's own messages, for a failure's report
	// session starts Gas Town's command line for a session in a new host
	// tmux session; with after, the pane's shell runs hostd run and then
	// after, instead of exec'ing hostd run.
	session := func(name, script string, after ...string) {
		t.Helper()
		line := "env GT_RIG=gastown GT_POLECAT=toast GT_PROCESS_NAMES=claude,node E2E_SECRET=s3cr3t HOSTD_LIVENESS_BEAT_INTERVAL=1s " +
			hostd + " --town " + r.git.Dir + " run --image " + r.image + " --network " + r.net + " --env E2E_SECRET" +
			" --url https://" + r.addr + " -- /usr/bin/sh -c '" + script + "' 2>>" + runLog
		if len(after) == 0 {
			line = "exec " + line
		} else {
			line += "; " + strings.Join(after, "; ")
		}
		if out, err := tmux("-f", "/dev/null", "new-session", "-d", "-s", name, "-x", "120", "-y", "30", line, ";",
			"set-option", "-t", name, "remain-on-exit", "on"); err != nil {
			t.Fatalf("starting the host session: %v %s", err, out)
		}
	}
	screen := func(name string) string { out, _ := tmux("capture-pane", "-p", "-t", name); return out }
	// Each step needs the one before: the first to fail ends the test.
	step := func(name string, f func(t *testing.T)) {
		r.check(name, f)
		if t.Failed() {
			logs, _ := tryDocker("logs", container)
			run, _ := os.ReadFile(runLog)
			t.Fatalf("the host panes:\n%s\n%s\nhostd run's messages:\n%s\nthe sandbox's log:\n%s", screen("gastown-toast"), screen("gastown-toast-2"), run, logs)
		}
	}

	step("the first session makes the sandbox, clones the polecat's branch and shows on the host pane", func(t *testing.T) {
		session("gastown-toast", `echo wip > /work/gastown/uncommitted.txt; echo "session one: $GT_POLECAT $E2E_SECRET on $(git branch --show-current)"; read line; echo "typed: $line"; sleep 600`)
		eventually(t, 90*time.Second, "the session's first line on the host pane", func() bool {
			return strings.Contains(screen("gastown-toast"), "session one: toast s3cr3t on polecat/toast-1")
		})
		r.wait(30*time.Second, "toast connected", harness.Connected("toast", ""))
	})

	step("keys typed into the host pane reach the session (gt nudge), its screen shows there (gt peek)", func(t *testing.T) {
		if out, err := tmux("send-keys", "-t", "gastown-toast", "-l", "hello from gas town"); err != nil {
			t.Fatal(err, out)
		}
		if out, err := tmux("send-keys", "-t", "gastown-toast", "Enter"); err != nil {
			t.Fatal(err, out)
		}
		eventually(t, 10*time.Second, "the typed line echoed back on the host pane", func() bool {
			return strings.Contains(screen("gastown-toast"), "typed: hello from gas town")
		})
	})

	step("Gas Town's liveness sees the pane: its command is hostd, listed in GT_PROCESS_NAMES", func(t *testing.T) {
		out, _ := tmux("display-message", "-p", "-t", "gastown-toast", "#{pane_current_command}")
		names, _ := tmux("show-environment", "-t", "gastown-toast", "GT_PROCESS_NAMES")
		if strings.TrimSpace(out) != "hostd" || strings.TrimSpace(names) != "GT_PROCESS_NAMES=claude,node,hostd" {
			t.Fatalf("pane command %q, session %q: want hostd in GT_PROCESS_NAMES", out, names)
		}
	})

	var id string
	step("killing the host session ends the session; the sandbox and its uncommitted work stay", func(t *testing.T) {
		id = strings.TrimSpace(r.docker("inspect", "-f", "{{.Id}}", container))
		if out, err := tmux("kill-session", "-t", "gastown-toast"); err != nil {
			t.Fatal(err, out)
		}
		eventually(t, 20*time.Second, "the container's session ended", func() bool {
			_, err := tryDocker("exec", container, "tmux", "has-session", "-t", "=polecat")
			return err != nil
		})
		if running := strings.TrimSpace(r.docker("inspect", "-f", "{{.State.Running}}", container)); running != "true" {
			t.Fatalf("the sandbox is not running after the session ended: %s", running)
		}
	})

	step("the next session starts in the same sandbox, and its exit status is hostd run's", func(t *testing.T) {
		// Read from the shell, not from tmux's pane_dead_status: Debian's
		// tmux (with libutempter) sometimes never reaps a pane's process
		// that exits while it runs utempter for that pane's end of file,
		// leaving the status empty.
		session("gastown-toast-2", `echo "session two sees: $(cat /work/gastown/uncommitted.txt)"; sleep 3; exit 7`,
			`echo "hostd run exited with $?"`)
		var last string
		for deadline := time.Now().Add(30 * time.Second); !strings.Contains(last, "session two sees: wip"); time.Sleep(100 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("the second session's first line never showed on the host pane; it showed:\n%s", last)
			}
			last = screen("gastown-toast-2")
		}
		eventually(t, 30*time.Second, "hostd run exited with the session's status, 7", func() bool {
			return strings.Contains(screen("gastown-toast-2"), "hostd run exited with 7")
		})
		if now := strings.TrimSpace(r.docker("inspect", "-f", "{{.Id}}", container)); now != id {
			t.Errorf("the second session ran in container %s, the first in %s", now, id)
		}
	})

	step("removing the polecat's directory (gt polecat nuke) removes the sandbox, revokes the polecat and forgets it", func(t *testing.T) {
		r.git.Git(t, r.git.Repo, "worktree", "remove", "--force", filepath.Join(polecatDir, "gastown"))
		if err := os.RemoveAll(polecatDir); err != nil {
			t.Fatal(err)
		}
		eventually(t, 20*time.Second, "the sandbox removed", func() bool {
			_, err := tryDocker("inspect", container)
			return err != nil
		})
		r.wait(10*time.Second, "toast forgotten", func(st api.Status) bool {
			return !slices.ContainsFunc(st.Polecats, func(p api.Polecat) bool { return p.Name == "toast" })
		})
		base := state.For(r.git.Dir).PolecatData(wire.Identity{Rig: "gastown", Name: "toast"})
		eventually(t, 10*time.Second, "toast's data base removed", func() bool {
			_, err := os.Lstat(base)
			return errors.Is(err, fs.ErrNotExist)
		})
		if !strings.Contains(r.git.Run("cert", "list"), "revoked") {
			t.Error("toast's certificate is not revoked")
		}
	})
}
