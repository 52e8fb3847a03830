// Package worktree judges what a push would do to a host worktree where
// the pushed branch is checked out, as git's checkout
// (receive.denyCurrentBranch=updateInstead) would write it there: which
// worktrees of the repository have a branch checked out, the checkout's
// size against its bounds, the guard (nothing under .beads, .githooks or
// the worktree's hooks path, no symlink resolving outside, names folded as
// a Mac folds them), and leaving a worktree behind its branch. hostd's
// git hooks (hostd/git/hook) call it inside receive-pack.
package worktree

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// Worktree is a working tree of the repository the hook runs in: Admin is
// its administrative directory (the repository itself for the main
// worktree, worktrees/<id> for a linked one), Dir the directory checked
// out there, "" for a bare repository's main worktree, which has none,
// and for a linked worktree whose record git would not read either.
type Worktree struct {
	Admin, Dir string
}

// CheckedOut maps each ref checked out in the repository at
// gitDir (a bare one's HEAD, which git skips, only makes this map larger)
// and in each of its linked worktrees, with the branches a worktree is
// rebasing or bisecting, which receive-pack treats as checked out there
// too, to the worktrees it is checked out in. A repository without linked
// worktrees has none to read beyond its HEAD.
func CheckedOut(gitDir string) (map[string][]Worktree, error) {
	gitDir, err := filepath.Abs(gitDir)
	if err != nil {
		return nil, fmt.Errorf("finding the repository: %w", err)
	}
	main, err := mainWorktree(gitDir)
	if err != nil {
		return nil, err
	}
	wts := []Worktree{main}
	entries, err := os.ReadDir(filepath.Join(gitDir, "worktrees"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("listing the repository's worktrees: %w", err)
	}
	for _, e := range entries {
		wt := Worktree{Admin: filepath.Join(gitDir, "worktrees", e.Name())}
		if b, err := os.ReadFile(filepath.Join(wt.Admin, "gitdir")); err == nil && filepath.IsAbs(strings.TrimSpace(string(b))) {
			wt.Dir = filepath.Dir(strings.TrimSpace(string(b))) // gitdir names <dir>/.git
		}
		wts = append(wts, wt)
	}
	refs := map[string][]Worktree{}
	for _, wt := range wts {
		for _, name := range []string{"HEAD", "rebase-merge/head-name", "rebase-apply/head-name", "BISECT_START"} {
			b, err := os.ReadFile(filepath.Join(wt.Admin, name))
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("reading %s of worktree %s: %w", name, filepath.Base(wt.Admin), err)
			}
			s := strings.TrimSpace(string(b))
			switch name {
			case "HEAD":
				var ok bool
				if s, ok = strings.CutPrefix(s, "ref: "); !ok {
					continue // detached
				}
			case "BISECT_START": // a branch's short name, or a commit id that names no branch
				s = "refs/heads/" + s
			}
			if !slices.Contains(refs[s], wt) {
				refs[s] = append(refs[s], wt)
			}
		}
	}
	return refs, nil
}

// mainWorktree is the repository at gitDir as its main worktree: with no
// directory when it is bare (Gas Town's .repo.git), else the directory
// its .git is in.
func mainWorktree(gitDir string) (Worktree, error) {
	out, err := exec.Command("git", "--git-dir="+gitDir, "rev-parse", "--is-bare-repository").Output()
	if err != nil {
		return Worktree{}, fmt.Errorf("asking whether the repository is bare: %w", err)
	}
	if strings.TrimSpace(string(out)) == "true" {
		return Worktree{Admin: gitDir}, nil
	}
	return Worktree{Admin: gitDir, Dir: filepath.Dir(gitDir)}, nil
}

// worktreeGit is git run in wt's directory on wt, with the hook's
// environment but for what names another repository, index or
// configuration (hostd's -c options among them).
func worktreeGit(wt Worktree, args ...string) *exec.Cmd {
	cmd := exec.Command("git", append([]string{"--git-dir=" + wt.Admin, "--work-tree=" + wt.Dir}, args...)...)
	cmd.Dir = wt.Dir
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch {
		case name == "GIT_DIR", name == "GIT_WORK_TREE", name == "GIT_INDEX_FILE", name == "GIT_PREFIX",
			name == "GIT_CONFIG_PARAMETERS", strings.HasPrefix(name, "GIT_CONFIG_COUNT"),
			strings.HasPrefix(name, "GIT_CONFIG_KEY_"), strings.HasPrefix(name, "GIT_CONFIG_VALUE_"):
			continue
		}
		cmd.Env = append(cmd.Env, kv)
	}
	return cmd
}
