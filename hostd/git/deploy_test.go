package git

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// TestPushToCheckout pushes through Service with git.worktree_guard=skip,
// so that hostd's push-to-checkout updates the host worktree: a push the
// guard passes updates it as git would; one it does not lands and leaves
// the worktree as it was, recorded as behind (its index a tree behind its
// HEAD, which git status shows as the push undone); the next push the
// guard passes catches the worktree up; a worktree with the host's own
// changes refuses a push, in git's words. A hostd started again with
// refuse removes the hook.
func TestPushToCheckout(t *testing.T) {
	town := t.TempDir()
	repo := filepath.Join(town, "gastown", ".repo.git")
	wt, main := worktreeRepo(t, repo)
	const branch = "polecat/furiosa-wt"
	work, s := serveClone(t, town, branch, func(cfg *Config) { cfg.WorktreeGuard = GuardSkip })
	hook := filepath.Join(town, "hooks", PushToCheckout)
	if _, err := os.Lstat(hook); err != nil {
		t.Fatalf("no push-to-checkout hook with skip: %v", err)
	}
	admin := gitIn(t, wt, nil, "rev-parse", "--absolute-git-dir")
	push := func(commit string) (string, error) {
		return tryGit(t, work, nil, "push", "origin", commit+":refs/heads/"+branch)
	}
	at := func(want, why string) {
		t.Helper()
		if got := gitIn(t, repo, nil, "rev-parse", "refs/heads/"+branch); got != want {
			t.Errorf("%s: the branch is at %s, want %s", why, got, want)
		}
	}
	has := func(name string) bool { _, err := os.Lstat(filepath.Join(wt, name)); return err == nil }

	// Passed: updated as git would.
	c1 := commitPaths(t, work, main, map[string]string{"README": "hello\n", "work1": "1"})
	if out, err := push(c1); err != nil {
		t.Fatalf("push: %v\n%s", err, out)
	}
	if !has("work1") || gitIn(t, wt, nil, "status", "--porcelain") != "" {
		t.Fatalf("the worktree did not follow a push the guard passes: %s", gitIn(t, wt, nil, "status", "--porcelain"))
	}

	// Not passed: lands, the worktree stays.
	c2 := commitPaths(t, work, c1, map[string]string{"README": "hello\n", "work1": "1", "work2": "2", ".beads/hooks/on_create": "100755 #!/bin/sh\n"})
	out, err := push(c2)
	if err != nil || !strings.Contains(out, "lands, but its host worktree is not updated") || !strings.Contains(out, `".beads/hooks/on_create"`) {
		t.Fatalf("push the guard skips: %v\n%s", err, out)
	}
	at(c2, "skipped")
	if has(".beads") || has("work2") {
		t.Error("the skipped push wrote into the worktree")
	}
	if b, err := os.ReadFile(filepath.Join(admin, behindFile)); err != nil || !strings.HasSuffix(strings.TrimSpace(string(b)), " "+c2) {
		t.Errorf("the worktree is not recorded as behind: %q %v", b, err)
	}
	if st := gitIn(t, wt, nil, "status", "--porcelain"); !strings.Contains(st, "D  .beads/hooks/on_create") {
		t.Errorf("git status in the worktree left behind:\n%s", st)
	}
	if got := guardCount(t, s, GuardSkip); got != 1 {
		t.Errorf("%v skips counted", got)
	}

	// Passed again: the worktree catches up.
	c3 := commitPaths(t, work, c2, map[string]string{"README": "hello\n", "work1": "1", "work2": "2", "work3": "3"})
	if out, err := push(c3); err != nil {
		t.Fatalf("push after a skip: %v\n%s", err, out)
	}
	if !has("work2") || !has("work3") || has(".beads") || gitIn(t, wt, nil, "status", "--porcelain") != "" {
		t.Errorf("the worktree did not catch up: %s", gitIn(t, wt, nil, "status", "--porcelain"))
	}
	if _, err := os.Stat(filepath.Join(admin, behindFile)); err == nil {
		t.Error("the worktree is still recorded as behind")
	}

	// The host's own changes: refused, in git's words.
	if err := os.WriteFile(filepath.Join(wt, "README"), []byte("the operator's edit\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c4 := commitPaths(t, work, c3, map[string]string{"README": "hello\n", "work4": "4"})
	if out, err := push(c4); err == nil || !strings.Contains(out, "working directory has unstaged changes") {
		t.Errorf("push over the host's changes: %v\n%s", err, out)
	}
	at(c3, "over the host's changes")
	if b, _ := os.ReadFile(filepath.Join(wt, "README")); string(b) != "the operator's edit\n" {
		t.Errorf("the host's edit became %q", b)
	}

	cfg := DefaultConfig()
	cfg.Town, cfg.HooksDir, cfg.TempDir = town, filepath.Join(town, "hooks"), t.TempDir()
	if _, err := New(cfg); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(hook); err == nil {
		t.Error("push-to-checkout is still installed with refuse")
	}
}

// guardCount is sidecar_git_worktree_guard_total{action} of s.
func guardCount(t *testing.T, s *Service, action string) float64 {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(s.Collectors()...)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "sidecar_git_worktree_guard_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			if l := m.GetLabel(); len(l) == 1 && l[0].GetValue() == action {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}
