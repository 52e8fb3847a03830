//go:build e2e

package e2e

import (
	"context"
	"errors"
	"io/fs"
	"net"
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
// starts in it and hostd run exits with its status; a session after Gas
// Town gave the polecat a new branch (its reuse) starts on that branch,
// the uncommitted work kept in a stash, and one whose branch the clone
// cannot be brought to fails with the reason; a polecat made under the
// name of a nuked one gets a sandbox of its own; removing the polecat's
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

	worktree := filepath.Join(polecatDir, "gastown")
	step("a reused polecat: the next session starts on the branch Gas Town checked out, the uncommitted work kept in a stash", func(t *testing.T) {
		// gt sling of the next bead to the idle polecat: a new branch in
		// its worktree (Gas Town's ReuseIdlePolecat), the sandbox kept.
		r.git.Git(t, worktree, "checkout", "-q", "-b", "polecat/toast/gt-next@x1", "main")
		session("gastown-toast-3", `echo "session three: on $(git branch --show-current), $(git stash list | wc -l) stash, wip $(cat uncommitted.txt 2>/dev/null || echo gone)"; sleep 600`)
		eventually(t, 30*time.Second, "the third session's first line on the host pane", func() bool {
			return strings.Contains(screen("gastown-toast-3"), "session three: on polecat/toast/gt-next@x1, 1 stash, wip gone")
		})
		stash, err := tryDocker("exec", container, "git", "-C", "/work/gastown", "stash", "show", "--include-untracked", "--name-only")
		if err != nil || !strings.Contains(stash, "uncommitted.txt") {
			t.Fatalf("the stash does not hold the first session's uncommitted file: %v %s", err, stash)
		}
		if run, _ := os.ReadFile(runLog); !strings.Contains(string(run), "uncommitted work found on polecat/toast-1 is kept in the sandbox's stash") {
			t.Fatalf("hostd run did not say where the uncommitted work went:\n%s", run)
		}
		if out, err := tmux("kill-session", "-t", "gastown-toast-3"); err != nil {
			t.Fatal(err, out)
		}
	})

	step("a branch the clone cannot be brought to fails the session with the reason", func(t *testing.T) {
		r.git.Git(t, worktree, "checkout", "-q", "--orphan", "polecat/toast/unborn")
		// The exit status goes to a file: a pane whose command ends at
		// once may show nothing (tmux).
		status := filepath.Join(t.TempDir(), "status")
		session("gastown-toast-4", `echo "session four ran" > /tmp/ran`, `echo $? > `+status)
		var code []byte
		eventually(t, 30*time.Second, "hostd run exited", func() bool {
			code, _ = os.ReadFile(status)
			return strings.HasSuffix(string(code), "\n")
		})
		if _, err := tryDocker("exec", container, "test", "-e", "/tmp/ran"); err == nil || strings.TrimSpace(string(code)) == "0" {
			t.Fatalf("the session ran on another branch than its worktree's (hostd run exited with %s)", code)
		}
		if run, _ := os.ReadFile(runLog); !strings.Contains(string(run), "bringing the sandbox's clone to polecat/toast/unborn") {
			t.Fatalf("hostd run's reason does not name the branch:\n%s", run)
		}
		out, _ := tryDocker("exec", container, "git", "-C", "/work/gastown", "branch", "--show-current")
		if strings.TrimSpace(out) != "polecat/toast/gt-next@x1" {
			t.Fatalf("the clone is on %q after the failed switch, want it left on polecat/toast/gt-next@x1", out)
		}
	})

	// inBox runs a shell script in the sandbox's clone as the polecat.
	inBox := func(t *testing.T, script string) string {
		t.Helper()
		out, err := tryDocker("exec", "-w", "/work/gastown", "-e", "GIT_AUTHOR_NAME=toast", "-e", "GIT_AUTHOR_EMAIL=toast@example.com",
			"-e", "GIT_COMMITTER_NAME=toast", "-e", "GIT_COMMITTER_EMAIL=toast@example.com", container, "sh", "-c", script)
		if err != nil {
			t.Fatalf("%s: %v %s", script, err, out)
		}
		return strings.TrimSpace(out)
	}
	step("commits on a detached HEAD are kept on a branch when the clone moves to the next branch", func(t *testing.T) {
		inBox(t, "git checkout -q --detach && git commit -q --allow-empty -m 'made detached'")
		r.git.Git(t, worktree, "checkout", "-q", "-f", "-b", "polecat/toast/gt-third@x3", "main")
		session("gastown-toast-6", `echo "session six: on $(git branch --show-current), kept $(git log -1 --format=%s --branches=polecat-sidecar/*)"; sleep 600`)
		eventually(t, 30*time.Second, "the sixth session's first line on the host pane", func() bool {
			return strings.Contains(screen("gastown-toast-6"), "session six: on polecat/toast/gt-third@x3, kept made detached")
		})
		if run, _ := os.ReadFile(runLog); !strings.Contains(string(run), "commit(s) of the detached HEAD that origin does not have are kept on branch polecat-sidecar/detached-") {
			t.Fatalf("hostd run did not say where the detached HEAD's commits went:\n%s", run)
		}
		if out, err := tmux("kill-session", "-t", "gastown-toast-6"); err != nil {
			t.Fatal(err, out)
		}
	})

	step("a branch the clone cannot fast-forward fails the session and leaves the clone where it was, so the next start tries again", func(t *testing.T) {
		// The clone's gt-next has a commit the rig's lacks, and the
		// rig's one the clone's lacks.
		inBox(t, "git update-ref refs/heads/polecat/toast/gt-next@x1 $(git commit-tree -p polecat/toast/gt-next@x1 -m 'the clone' HEAD^{tree})")
		diverged := strings.TrimSpace(r.git.Git(t, r.git.Repo, "commit-tree", "-p", "polecat/toast/gt-next@x1", "-m", "the rig", "main^{tree}"))
		r.git.Git(t, r.git.Repo, "update-ref", "refs/heads/polecat/toast/gt-next@x1", diverged)
		r.git.Git(t, worktree, "checkout", "-q", "-f", "polecat/toast/gt-next@x1")
		for i, name := range []string{"gastown-toast-7", "gastown-toast-8"} {
			status := filepath.Join(t.TempDir(), "status")
			session(name, `echo ran > /tmp/ran-`+name, `echo $? > `+status)
			var code []byte
			eventually(t, 30*time.Second, "hostd run exited", func() bool {
				code, _ = os.ReadFile(status)
				return strings.HasSuffix(string(code), "\n")
			})
			if _, err := tryDocker("exec", container, "test", "-e", "/tmp/ran-"+name); err == nil || strings.TrimSpace(string(code)) == "0" {
				t.Fatalf("start %d ran the session on a branch that is not the rig's (hostd run exited with %s)", i+1, code)
			}
			if on := inBox(t, "git branch --show-current"); on != "polecat/toast/gt-third@x3" {
				t.Fatalf("after start %d the clone is on %q, want it back on polecat/toast/gt-third@x3", i+1, on)
			}
		}
		if run, _ := os.ReadFile(runLog); !strings.Contains(string(run), "bringing polecat/toast/gt-next@x1 up to the rig's") {
			t.Fatalf("hostd run's reason does not say the branch could not be brought up to the rig's:\n%s", run)
		}
	})

	step("a polecat Gas Town makes under a nuked one's name gets a sandbox of its own", func(t *testing.T) {
		// gt polecat nuke, then gt sling giving the name to the next
		// polecat at once: hostd run, or the reaper if it is first, tells
		// the earlier polecat's sandbox by the directory it was made for.
		old := strings.TrimSpace(r.docker("inspect", "-f", "{{.Id}}", container))
		r.git.Git(t, r.git.Repo, "worktree", "remove", "--force", worktree)
		if err := os.RemoveAll(polecatDir); err != nil {
			t.Fatal(err)
		}
		r.git.Git(t, r.git.Repo, "worktree", "add", "-q", "-b", "polecat/toast/gt-new@x2", worktree, "main")
		session("gastown-toast-5", `echo "session five: on $(git branch --show-current), $(git stash list | wc -l) stash"; sleep 600`)
		eventually(t, 60*time.Second, "the new polecat's first line on the host pane", func() bool {
			return strings.Contains(screen("gastown-toast-5"), "session five: on polecat/toast/gt-new@x2, 0 stash")
		})
		if now := strings.TrimSpace(r.docker("inspect", "-f", "{{.Id}}", container)); now == old {
			t.Fatalf("the new polecat runs in the earlier polecat's container %s", old)
		}
		r.wait(30*time.Second, "the new toast connected", harness.Connected("toast", ""))
		if out, err := tmux("kill-session", "-t", "gastown-toast-5"); err != nil {
			t.Fatal(err, out)
		}
	})

	step("removing the polecat's directory (gt polecat nuke) removes the sandbox, revokes the polecat and forgets it", func(t *testing.T) {
		r.git.Git(t, r.git.Repo, "worktree", "remove", "--force", worktree)
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

// TestSandboxFailures: a start hostd run cannot make fails within
// seconds with one line on Gas Town's pane saying what to do, leaves no
// container, and shows in hostd status until the polecat's next start
// succeeds: with hostd serve down (reported once serve runs again), with
// an image the engine does not have, and with a sandbox whose agent
// cannot reach hostd (the container hostd run made for it removed once
// the agent gave up and it stopped).
func TestSandboxFailures(t *testing.T) {
	start := time.Now()
	r := newRig(t)
	summary.add("setup: network, firewall, hostd on the gateway", true, time.Since(start))
	hostd := filepath.Join(harness.BinDir, "hostd")
	missing := "polecat-e2e-missing:" + r.id
	// polecat names a polecat of gastown whose directory Gas Town made (a
	// failure is shown until Gas Town removes it), with no container yet.
	polecat := func(name string) string {
		container := "gt-gastown-" + name
		_, _ = tryDocker("rm", "-f", "-v", container) // a run killed before its cleanup
		undo.push(func() { _, _ = tryDocker("rm", "-f", "-v", container) })
		if err := os.MkdirAll(filepath.Join(r.git.Dir, "gastown", "polecats", name), 0o755); err != nil {
			t.Fatal(err)
		}
		return container
	}
	// run runs Gas Town's command line for gastown/<name>'s session,
	// without a terminal, with image and hostd at url, and returns what
	// hostd run printed, its exit status and how long it took.
	run := func(name, image, url string, command ...string) (string, int, time.Duration) {
		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, hostd, append([]string{"--town", r.git.Dir, "run", "--image", image, "--network", r.net, "--url", url, "--"}, command...)...)
		cmd.Env = append(os.Environ(), "GT_RIG=gastown", "GT_POLECAT="+name, "HOSTD_LIVENESS_BEAT_INTERVAL=1s")
		begin := time.Now()
		out, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatalf("hostd run: %v\n%s", err, out)
		}
		return string(out), code, time.Since(begin)
	}
	// failed checks that hostd run failed with one line saying want on
	// the pane within limit, and left no container.
	failed := func(t *testing.T, container, out string, code int, took, limit time.Duration, want string) {
		t.Helper()
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if last := lines[len(lines)-1]; code != 1 || !strings.HasPrefix(last, "hostd: gastown/") || !strings.Contains(last, want) {
			t.Errorf("hostd run: exit %d, output:\n%s\nwant 1 and a last line saying %q", code, out, want)
		}
		if took > limit {
			t.Errorf("hostd run took %v to fail, more than %v", took, limit)
		}
		if out, err := tryDocker("container", "inspect", "-f", "{{.State.Status}}", container); err == nil {
			t.Errorf("a failed start left container %s (%s)", container, strings.TrimSpace(out))
		}
	}
	// shows waits for hostd status to show gastown/<name>'s failure with
	// want in its reason, and checks the table says it too.
	shows := func(t *testing.T, name, want string) {
		t.Helper()
		r.wait(10*time.Second, "gastown/"+name+"'s failed start in hostd status", func(st api.Status) bool {
			for _, f := range st.StartFailures {
				if f.Identity.Name == name && strings.Contains(f.Reason, want) {
					return true
				}
			}
			return false
		})
		if out := r.git.Run("status"); !strings.Contains(out, "  gastown/"+name+", ") || !strings.Contains(out, want) {
			t.Errorf("hostd status does not show gastown/%s's failure %q:\n%s", name, want, out)
		}
	}
	step := func(name string, f func(t *testing.T)) {
		r.check(name, f)
		if t.Failed() {
			t.FailNow()
		}
	}

	step("with hostd serve down, hostd run fails within seconds, makes nothing, and serve shows it once it runs", func(t *testing.T) {
		container := polecat("down")
		_ = r.hostd.Cmd.Process.Kill()
		_ = r.hostd.Exited(t, 5*time.Second)
		out, code, took := run("down", r.image, "https://"+r.addr, "/usr/bin/sh", "-c", "exit 0")
		r.startHostd()
		failed(t, container, out, code, took, 5*time.Second, "hostd is not running")
		shows(t, "down", "hostd is not running")
	})

	step("with a missing image, hostd run fails within seconds, makes nothing, and hostd status shows why", func(t *testing.T) {
		container := polecat("noimage")
		out, code, took := run("noimage", missing, "https://"+r.addr, "/usr/bin/sh", "-c", "exit 0")
		failed(t, container, out, code, took, 10*time.Second, "image "+missing+" is not among docker's images")
		shows(t, "noimage", "image "+missing+" is not among docker's images")
	})

	step("a sandbox whose agent cannot reach hostd is removed once it stops, and the failure says so", func(t *testing.T) {
		container := polecat("noclone")
		_, port, _ := net.SplitHostPort(r.metrics) // the firewall refuses every port but the tunnel's
		out, code, took := run("noclone", r.image, "https://"+net.JoinHostPort(r.gateway, port), "/usr/bin/sh", "-c", "exit 0")
		failed(t, container, out, code, took, 3*time.Minute, "the sandbox gt-gastown-noclone stopped before its agent connected (exited with status 1): can it reach hostd at")
		shows(t, "noclone", "stopped before its agent connected")
	})

	step("the next start that succeeds clears the failure", func(t *testing.T) {
		out, code, _ := run("noimage", r.image, "https://"+r.addr, "/usr/bin/sh", "-c", "exit 3")
		if code != 3 {
			t.Fatalf("hostd run: exit %d, want the session's 3; output:\n%s", code, out)
		}
		r.wait(10*time.Second, "gastown/noimage's failure cleared", func(st api.Status) bool {
			for _, f := range st.StartFailures {
				if f.Identity.Name == "noimage" {
					return false
				}
			}
			return true
		})
	})
}
