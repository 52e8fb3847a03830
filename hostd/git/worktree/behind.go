package worktree

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// behindFile, in a worktree's administrative directory, records that
// hostd left the worktree behind its branch: the tree its index and files
// are at, and the commit the branch was pushed to then. While the branch
// is still at that commit, that tree, not the commit's, is what the
// worktree must match to be updated.
const behindFile = "sidecar-worktree-behind"

// Base is what wt's index and files must match for a push to
// update it: the tree hostd left it at when its branch is still at the
// commit hostd skipped (behindFile), else its HEAD, else (an unborn
// branch) the empty tree.
func Base(wt Worktree) (string, error) {
	head, err := worktreeGit(wt, "rev-parse", "-q", "--verify", "HEAD").Output()
	if err != nil {
		empty, err := worktreeGit(wt, "hash-object", "-t", "tree", "--stdin").Output()
		if err != nil {
			return "", fmt.Errorf("push-to-checkout: naming the empty tree: %w", err)
		}
		return strings.TrimSpace(string(empty)), nil
	}
	b, err := os.ReadFile(filepath.Join(wt.Admin, behindFile))
	if f := strings.Fields(string(b)); err == nil && len(f) == 2 && f[1] == strings.TrimSpace(string(head)) {
		return f[0], nil
	}
	return "HEAD", nil
}

// Ready refuses wt, in git's words (receive-pack's push_to_deploy),
// when its files differ from its index or its index from base.
func Ready(wt Worktree, base string) error {
	if worktreeGit(wt, "update-index", "-q", "--ignore-submodules", "--refresh").Run() != nil {
		return errors.New("up-to-date check failed")
	}
	if worktreeGit(wt, "diff-files", "--quiet", "--ignore-submodules", "--").Run() != nil {
		return errors.New("working directory has unstaged changes")
	}
	if worktreeGit(wt, "diff-index", "--quiet", "--cached", "--ignore-submodules", base, "--").Run() != nil {
		return errors.New("working directory has staged changes")
	}
	return nil
}

// MarkBehind records that wt stays at base's tree while its branch moves
// to commit.
func MarkBehind(wt Worktree, base, commit string) error {
	tree, err := worktreeGit(wt, "rev-parse", "--verify", base+"^{tree}").Output()
	if err != nil {
		return fmt.Errorf("push-to-checkout: naming the tree the worktree stays at: %w", err)
	}
	line := strings.TrimSpace(string(tree)) + " " + commit + "\n"
	if err := os.WriteFile(filepath.Join(wt.Admin, behindFile), []byte(line), 0o644); err != nil {
		return fmt.Errorf("push-to-checkout: recording that the worktree stays behind: %w", err)
	}
	return nil
}

// Update checks commit out in wt as git's own update of a worktree does
// (read-tree -u -m), for push-to-checkout.
func Update(wt Worktree, commit string) error {
	if out, err := worktreeGit(wt, "read-tree", "-u", "-m", commit).CombinedOutput(); err != nil {
		return fmt.Errorf("could not update working tree to new HEAD: %v: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

// ForgetBehind forgets that wt was left behind its branch (see
// MarkBehind), once it has been updated.
func ForgetBehind(wt Worktree) error {
	if err := os.Remove(filepath.Join(wt.Admin, behindFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("forgetting it was behind: %w", err)
	}
	return nil
}
