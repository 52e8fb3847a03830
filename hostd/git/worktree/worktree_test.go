package worktree

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/polecat-sidecar/sidecar/hostd/git/internal/fixture"
)

// TestCheckedOutWorktrees: the branches git's updateInstead would write
// into a worktree, and the worktrees: those checked out in linked
// worktrees, and those a worktree is rebasing or bisecting; not a detached
// worktree's. A bare repository's HEAD counts, with no directory.
func TestCheckedOutWorktrees(t *testing.T) {
	repo := filepath.Join(t.TempDir(), "repo.git")
	fixture.GitIn(t, "", nil, "init", "-q", "--bare", "-b", "main", repo)
	bare := Worktree{Admin: repo}
	if got, err := CheckedOut(repo); err != nil || len(got) != 1 || !slices.Equal(got["refs/heads/main"], []Worktree{bare}) {
		t.Fatalf("no worktrees: %v %v, want only the bare repository's HEAD", got, err)
	}
	main := fixture.CommitTree(t, repo, "", fixture.Text("README", "hello\n"))
	fixture.GitIn(t, repo, nil, "update-ref", "refs/heads/main", main)
	dir := t.TempDir()
	fixture.GitIn(t, repo, nil, "worktree", "add", "-q", "-b", "polecat/furiosa-a", filepath.Join(dir, "a"), "main")
	fixture.GitIn(t, repo, nil, "worktree", "add", "-q", "--detach", filepath.Join(dir, "b"), "main")
	fixture.GitIn(t, repo, nil, "worktree", "add", "-q", "--detach", filepath.Join(dir, "c"), "main")
	fixture.GitIn(t, repo, nil, "worktree", "add", "-q", "--detach", filepath.Join(dir, "d"), "main")
	// b rebases polecat/furiosa-b (its state as git writes it), c bisects
	// with nux's branch as the one to return to.
	admin := func(wt string) string {
		return fixture.GitIn(t, filepath.Join(dir, wt), nil, "rev-parse", "--absolute-git-dir")
	}
	_ = os.MkdirAll(filepath.Join(admin("b"), "rebase-merge"), 0o755)
	_ = os.WriteFile(filepath.Join(admin("b"), "rebase-merge", "head-name"), []byte("refs/heads/polecat/furiosa-b\n"), 0o644)
	_ = os.WriteFile(filepath.Join(admin("c"), "BISECT_START"), []byte("polecat/nux-c\n"), 0o644)
	got, err := CheckedOut(repo)
	if err != nil {
		t.Fatal(err)
	}
	in := func(wt string) []Worktree { return []Worktree{{Admin: admin(wt), Dir: filepath.Join(dir, wt)}} }
	want := map[string][]Worktree{"refs/heads/main": {bare}, "refs/heads/polecat/furiosa-a": in("a"),
		"refs/heads/polecat/furiosa-b": in("b"), "refs/heads/polecat/nux-c": in("c")}
	if !maps.EqualFunc(got, want, slices.Equal) {
		t.Errorf("checked out: %v, want %v", got, want)
	}
}
