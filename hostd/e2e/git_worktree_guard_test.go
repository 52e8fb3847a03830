package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// hostWorktree makes furiosa's host worktree as Gas Town does, a linked
// worktree of the rig's .repo.git at <town>/gastown/polecats/furiosa/gastown
// on branch, made from main, and returns it with a clone of the branch
// through furiosa's tunnel at url.
func hostWorktree(t *testing.T, g *GitTown, url, branch string) (host, work string) {
	t.Helper()
	host = filepath.Join(g.Dir, "gastown", "polecats", "furiosa", "gastown")
	g.Git(t, g.Repo, "worktree", "add", "-q", "-b", branch, host, "main")
	work = filepath.Join(t.TempDir(), "w")
	g.Git(t, "", "clone", "-q", "--branch", branch, url, work)
	return host, work
}

// commitFiles writes files (path to content; a content starting "-> " is
// a symlink to the rest) into the clone at dir, with mode 0755 for paths
// in exec, and commits everything.
func commitFiles(t *testing.T, g *GitTown, dir, msg string, files map[string]string, exec ...string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		_ = os.Remove(p)
		if target, ok := strings.CutPrefix(content, "-> "); ok {
			if err := os.Symlink(target, p); err != nil {
				t.Fatal(err)
			}
			continue
		}
		mode := os.FileMode(0o644)
		for _, e := range exec {
			if e == name {
				mode = 0o755
			}
		}
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
	}
	g.Git(t, dir, "add", "-A", "-f")
	g.Git(t, dir, "commit", "-q", "-m", msg)
}

// refusedUntouched checks that a push to branch was refused naming each
// of paths and git.worktree_guard, and left the branch at want and the
// host worktree clean at it.
func refusedUntouched(t *testing.T, g *GitTown, host, branch, want, out string, err error, paths ...string) {
	t.Helper()
	if err == nil || !strings.Contains(out, "git.worktree_guard=refuse") {
		t.Errorf("push not refused by the worktree guard: %v\n%s", err, out)
	}
	t.Logf("refused:\n%s", out)
	for _, p := range paths {
		if !strings.Contains(out, `"`+p+`"`) {
			t.Errorf("the refusal does not name %q:\n%s", p, out)
		}
	}
	if got := strings.TrimSpace(g.Git(t, g.Repo, "rev-parse", branch)); got != want {
		t.Errorf("the refused push moved %s to %s", branch, got)
	}
	if got := strings.TrimSpace(g.Git(t, host, "rev-parse", "HEAD")); got != want {
		t.Errorf("the refused push moved the host worktree to %s", got)
	}
}

// TestGitPushBeadsIntoHostWorktree: a polecat pushes, to the branch
// checked out in its host worktree, a .beads/redirect of its own (Gas
// Town's is there, untracked and ignored, which git's checkout would
// replace) and a .beads/hooks/on_create, which the next relayed 'bd
// create' there would run on the host. The push is refused with both
// paths named; Gas Town's redirect stays and no hook is written. Before
// the guard, the push landed and wrote both.
func TestGitPushBeadsIntoHostWorktree(t *testing.T) {
	g := NewGitTown(t, "--git-upstream=false")
	url := g.Polecat(t, "furiosa")
	const branch = "polecat/furiosa-mk3x9a"
	host, work := hostWorktree(t, g, url, branch)
	if err := os.WriteFile(filepath.Join(g.Repo, "info", "exclude"), []byte(".beads/\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	redirect := filepath.Join(host, ".beads", "redirect")
	_ = os.MkdirAll(filepath.Dir(redirect), 0o755)
	if err := os.WriteFile(redirect, []byte("../../../mayor/rig/.beads\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	want := strings.TrimSpace(g.Git(t, host, "rev-parse", "HEAD"))

	commitFiles(t, g, work, "beads", map[string]string{
		".beads/redirect":         "../../../../otherrig/.beads\n",
		".beads/hooks/on_create":  "#!/bin/sh\ntouch /tmp/pwned\n",
		"src/honest-looking-work": "x\n",
	}, ".beads/hooks/on_create")
	out, err := g.TryGit(work, "push", "origin", "HEAD:"+branch)
	refusedUntouched(t, g, host, branch, want, out, err, ".beads/redirect", ".beads/hooks/on_create")
	if b, _ := os.ReadFile(redirect); string(b) != "../../../mayor/rig/.beads\n" {
		t.Errorf("Gas Town's redirect became %q", b)
	}
	if _, err := os.Lstat(filepath.Join(host, ".beads", "hooks", "on_create")); err == nil {
		t.Error("the polecat's bd hook is in the host worktree")
	}
	if !strings.Contains(g.Hostd.Output(), "push refused: it would change what host processes run or follow in a host worktree") {
		t.Errorf("hostd logged no refusal:\n%s", g.Hostd.Output())
	}

	// The same commits on a branch checked out nowhere land: nothing on
	// the host runs them there.
	g.Git(t, work, "push", "-q", "origin", "HEAD:polecat/furiosa-beads")
}

// TestGitPushSymlinkOutOfHostWorktree: a pushed symlink that resolves
// outside the host worktree is refused, whether it is .beads itself
// (a relayed 'gt prime' followed one into another rig's .beads and
// deleted its metadata.json) or a chain of links each of which looks
// harmless alone (a -> b/.., b -> ../..); a link that stays inside lands.
// Before the guard, both landed and the links were made on the host.
func TestGitPushSymlinkOutOfHostWorktree(t *testing.T) {
	g := NewGitTown(t, "--git-upstream=false")
	url := g.Polecat(t, "furiosa")
	const branch = "polecat/furiosa-mk3x9b"
	host, work := hostWorktree(t, g, url, branch)
	want := strings.TrimSpace(g.Git(t, host, "rev-parse", "HEAD"))

	for _, c := range []struct {
		name  string
		files map[string]string
		named []string
	}{
		{".beads", map[string]string{".beads": "-> ../../../../otherrig/.beads"}, []string{".beads"}},
		{"chain", map[string]string{"a": "-> b/..", "b": "-> ../.."}, []string{"a", "b"}},
	} {
		g.Git(t, work, "reset", "-q", "--hard", want)
		commitFiles(t, g, work, c.name, c.files)
		out, err := g.TryGit(work, "push", "origin", "HEAD:"+branch)
		refusedUntouched(t, g, host, branch, want, out, err, c.named...)
		for name := range c.files {
			if _, err := os.Lstat(filepath.Join(host, name)); err == nil {
				t.Errorf("%s: %s is in the host worktree", c.name, name)
			}
		}
	}

	g.Git(t, work, "reset", "-q", "--hard", want)
	commitFiles(t, g, work, "inside", map[string]string{"docs/readme": "-> ../README"})
	g.Git(t, work, "push", "-q", "origin", "HEAD:"+branch)
	if target, err := os.Readlink(filepath.Join(host, "docs", "readme")); err != nil || target != "../README" {
		t.Errorf("a link inside the worktree: %q %v", target, err)
	}
}

// TestGitPushGithooksIntoHostWorktree: the rig's repository has a
// .githooks directory, so Gas Town set core.hooksPath=.githooks; a push
// that adds a pre-commit there is refused, and a commit on the host in
// that worktree runs no hook of the polecat's; a push that leaves the
// rig's own hooks as they are lands. Before the guard, the push landed and
// the host's commit ran the polecat's hook.
func TestGitPushGithooksIntoHostWorktree(t *testing.T) {
	g := NewGitTown(t, "--git-upstream=false")
	url := g.Polecat(t, "furiosa")
	// The rig's own hook, on main.
	seed := filepath.Join(t.TempDir(), "seed")
	g.Git(t, "", "clone", "-q", g.Origin, seed)
	commitFiles(t, g, seed, "hooks", map[string]string{".githooks/pre-push": "#!/bin/sh\nexit 0\n"}, ".githooks/pre-push")
	g.Git(t, seed, "push", "-q", "origin", "main")
	g.Git(t, seed, "push", "-q", g.Repo, "main")
	const branch = "polecat/furiosa-mk3x9c"
	host, work := hostWorktree(t, g, url, branch)
	g.Git(t, host, "config", "core.hooksPath", ".githooks") // as gt doctor --fix does

	commitFiles(t, g, work, "work", map[string]string{"work.txt": "honest\n"})
	g.Git(t, work, "push", "-q", "origin", "HEAD:"+branch)
	want := strings.TrimSpace(g.Git(t, work, "rev-parse", "HEAD"))
	if got := strings.TrimSpace(g.Git(t, host, "rev-parse", "HEAD")); got != want {
		t.Fatalf("a push leaving the rig's hooks alone: host worktree at %s, want %s", got, want)
	}

	ran := filepath.Join(t.TempDir(), "ran")
	commitFiles(t, g, work, "evil", map[string]string{".githooks/pre-commit": "#!/bin/sh\ntouch '" + ran + "'\n"}, ".githooks/pre-commit")
	out, err := g.TryGit(work, "push", "origin", "HEAD:"+branch)
	refusedUntouched(t, g, host, branch, want, out, err, ".githooks/pre-commit")
	g.Git(t, host, "commit", "-q", "--allow-empty", "-m", "the host commits")
	if _, err := os.Stat(ran); err == nil {
		t.Error("a commit on the host ran the polecat's pre-commit hook")
	}
}

// TestGitWorktreeGuardSkip: with git.worktree_guard=skip, hostd (as its
// own push-to-checkout hook) lets a push the guard does not pass land and
// leaves the host worktree as it was, logging why; the next push it
// passes brings the worktree up to date.
func TestGitWorktreeGuardSkip(t *testing.T) {
	g := NewGitTown(t, "--git-upstream=false", "--git-worktree-guard", "skip")
	url := g.Polecat(t, "furiosa")
	const branch = "polecat/furiosa-mk3x9d"
	host, work := hostWorktree(t, g, url, branch)

	commitFiles(t, g, work, "hooked", map[string]string{".beads/hooks/on_create": "#!/bin/sh\n", "work1": "1\n"}, ".beads/hooks/on_create")
	out, err := g.TryGit(work, "push", "origin", "HEAD:"+branch)
	if err != nil || !strings.Contains(out, "its host worktree is not updated (git.worktree_guard=skip)") {
		t.Fatalf("push the guard skips: %v\n%s", err, out)
	}
	if got, want := g.Git(t, g.Repo, "rev-parse", branch), g.Git(t, work, "rev-parse", "HEAD"); got != want {
		t.Errorf("the skipped push did not land: %s, want %s", got, want)
	}
	for _, name := range []string{".beads", "work1"} {
		if _, err := os.Lstat(filepath.Join(host, name)); err == nil {
			t.Errorf("the skipped push wrote %s into the host worktree", name)
		}
	}
	if !strings.Contains(g.Hostd.Output(), "push landed without updating its host worktree") {
		t.Errorf("hostd logged no skip:\n%s", g.Hostd.Output())
	}

	g.Git(t, work, "rm", "-q", "-r", ".beads")
	commitFiles(t, g, work, "unhooked", map[string]string{"work2": "2\n"})
	g.Git(t, work, "push", "-q", "origin", "HEAD:"+branch)
	if st := g.Git(t, host, "status", "--porcelain"); st != "" {
		t.Errorf("the host worktree did not catch up:\n%s", st)
	}
	for _, name := range []string{"work1", "work2"} {
		if _, err := os.Stat(filepath.Join(host, name)); err != nil {
			t.Errorf("after catching up: %v", err)
		}
	}
}
