package e2e

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/polecat-sidecar/sidecar/tunnel/tunneltest"
)

// The README's walk is the shell blocks between these markers.
const (
	walkStart = "<!-- using-it"
	walkEnd   = "<!-- /using-it -->"
)

// readmeWalk is the shell of README.md's "Using it" walk: every ```sh
// block between the markers, in order.
func readmeWalk(t *testing.T) string { return docWalk(t, "../../README.md", walkStart, walkEnd) }

// walkRepo is this repository as a doc's walk finds it: a git
// repository with committed work, and bin/ as 'make build' leaves it.
func walkRepo(t *testing.T, home string) string {
	repo := t.TempDir()
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"commit", "-q", "--allow-empty", "-m", "first"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir, cmd.Env = repo, append(GitEnv(home), "GIT_CONFIG_NOSYSTEM=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	if err := os.Symlink(BinDir, filepath.Join(repo, "bin")); err != nil {
		t.Fatal(err)
	}
	return repo
}

// runWalk runs a doc's walk with bash -e in repo with env and returns
// what it printed, failing the test if it fails or does not end in 90 s.
// Its output goes to a file: hostd and the agent it starts outlive it.
// They are killed, with its tmux server, when the test ends.
func runWalk(t *testing.T, walk, repo string, env []string) string {
	t.Helper()
	logPath := filepath.Join(t.TempDir(), "walk.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	cmd := exec.Command("bash", "-e", "-c", walk)
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = repo, env, logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		tmux := exec.Command("tmux", "kill-server")
		tmux.Env = env
		_ = tmux.Run()
	})
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	said := func() string { b, _ := os.ReadFile(logPath); return string(b) }
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the walk failed: %v\n%s\nthe walk:\n%s", err, said(), walk)
		}
	case <-time.After(90 * time.Second):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		t.Fatalf("the walk did not end in 90s:\n%s", said())
	}
	return said()
}

// docWalk is the shell of a document's walk: every ```sh block between
// each start marker and the end marker after it, in order.
func docWalk(t *testing.T, doc, start, end string) string {
	t.Helper()
	b, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	var sections []string
	for rest := string(b); ; {
		_, after, ok := strings.Cut(rest, start)
		if !ok {
			break
		}
		section, tail, closed := strings.Cut(after, end)
		if !closed {
			t.Fatalf("%s has a %q with no %q after it", doc, start, end)
		}
		sections, rest = append(sections, section), tail
	}
	if len(sections) == 0 {
		t.Fatalf("%s has no %q ... %q section", doc, start, end)
	}
	script := fencedBlocks(strings.Join(sections, "\n"), "sh")
	if len(script) == 0 {
		t.Fatalf("%s: the walk's shell blocks are empty or unclosed", doc)
	}
	return strings.Join(script, "\n") + "\n"
}

// fencedBlocks is the ```lang blocks of text, in order.
func fencedBlocks(text, lang string) []string {
	var blocks []string
	var block []string
	in := false
	for _, line := range strings.Split(text, "\n") {
		switch {
		case !in && line == "```"+lang:
			in, block = true, nil
		case in && line == "```":
			in, blocks = false, append(blocks, strings.Join(block, "\n"))
		case in:
			block = append(block, line)
		}
	}
	if in {
		return nil
	}
	return blocks
}

// standIn writes an executable shell script.
func standIn(t *testing.T, path, body string) {
	t.Helper()
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
}

// TestReadmeUsingIt runs README.md's "Using it" walk as written, from a
// repository whose bin/ is what 'make build' makes, on a machine whose
// PATH has stand-ins for Gas Town's gt and bd and for Claude Code. Only
// its ports change (free ones for 9876 and 9878, which another test or
// the machine may hold). Every command must succeed, and the walk must
// show what it says: the relayed gt and bd ran on the host as the
// polecat, the pane, the push of the polecat's own branch landing in
// <town>/gastown/.repo.git and the push to main refused, the agent
// naming its revocation and ending the session.
func TestReadmeUsingIt(t *testing.T) {
	t.Parallel()
	walk := readmeWalk(t)
	hostdAddr, gitAddr := tunneltest.FreeAddr(t), tunneltest.FreeAddr(t)
	_, hostdPort, _ := net.SplitHostPort(hostdAddr)
	for from, to := range map[string]string{"localhost:9876": "localhost:" + hostdPort, "127.0.0.1:9878": gitAddr} {
		if !strings.Contains(walk, from) {
			t.Fatalf("the walk no longer uses %s: update this test", from)
		}
		walk = strings.ReplaceAll(walk, from, to)
	}

	home, tmp := t.TempDir(), t.TempDir()
	env := []string{"HOME=" + home, "TMPDIR=" + tmp, "TMUX_TMPDIR=" + tmp, "GIT_CONFIG_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0",
		"HOSTD_LISTEN=" + hostdAddr, "GT_AGENT_GIT_LISTEN=" + gitAddr}
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); !strings.HasPrefix(k, "HOSTD_") && !strings.HasPrefix(k, "GT_") && k != "TMUX" && k != "HOME" && k != "TMPDIR" {
			env = append(env, kv)
		}
	}
	// Gas Town's gt and bd, and Claude Code, first on PATH.
	tools := t.TempDir()
	for _, name := range []string{"gt", "bd"} {
		standIn(t, filepath.Join(tools, name), `echo "host $(basename "$0"): $* (as $GT_ROLE)"`+"\n")
	}
	standIn(t, filepath.Join(tools, "claude"), `echo "claude stand-in: $*"; exec sleep 300`+"\n")
	for i, kv := range env {
		if strings.HasPrefix(kv, "PATH=") {
			env[i] = "PATH=" + tools + string(os.PathListSeparator) + strings.TrimPrefix(kv, "PATH=")
		}
	}
	said := runWalk(t, walk, walkRepo(t, home), env)
	for _, want := range []string{
		"host gt: prime (as gastown/polecats/furiosa)",
		"host bd: show gt-123 (as gastown/polecats/furiosa)",
		"gastown/furiosa",
		"claude stand-in: --dangerously-skip-permissions",
		"gastown/furiosa may push only polecat/furiosa",
		"revoked this polecat's certificate",
		"stopped the polecat's session it started",
		"gt-agent exited with status 1",
	} {
		if !strings.Contains(said, want) {
			t.Errorf("the walk does not show %q:\n%s", want, said)
		}
	}
	repos, _ := filepath.Glob(filepath.Join(tmp, "*", "gastown", ".repo.git"))
	if len(repos) != 1 {
		t.Fatalf("the walk's town: %v, want one <town>/gastown/.repo.git in %s", repos, tmp)
	}
	if out, err := exec.Command("git", "--git-dir", repos[0], "rev-parse", "--verify", "-q", "refs/heads/polecat/furiosa-walk").CombinedOutput(); err != nil {
		t.Errorf("the polecat's push did not land in %s: %v\n%s", repos[0], err, out)
	}
}
