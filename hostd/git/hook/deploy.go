package hook

import (
	"fmt"
	"io"
	"os"

	"github.com/polecat-sidecar/sidecar/hostd/git/worktree"
)

// PushToCheckout is the hook git runs, when it exists, instead of its own
// update of a worktree where a pushed branch is checked out
// (receive.denyCurrentBranch=updateInstead). hostd installs it only with
// git.worktree_guard=skip; see RunPushToCheckout.
const PushToCheckout = "push-to-checkout"

// RunPushToCheckout is the push-to-checkout hook (git.worktree_guard=skip),
// run by git with the pushed commit, GIT_DIR and GIT_WORK_TREE; git moves
// the branch once it exits 0. It refuses a worktree that cannot take the
// push, in git's words (worktree.Ready); leaves one the pre-receive hook
// recorded as skipped as it is, marked behind; and updates any other as
// git would. Without the pre-receive hook's records it refuses. It returns
// the exit status.
func RunPushToCheckout(args []string, stderr io.Writer) int {
	wt := worktree.Worktree{Admin: os.Getenv("GIT_DIR"), Dir: os.Getenv("GIT_WORK_TREE")}
	if len(args) != 1 || wt.Admin == "" || wt.Dir == "" {
		fmt.Fprintln(stderr, "push-to-checkout: run by git receive-pack with the pushed commit, GIT_DIR and GIT_WORK_TREE")
		return 1
	}
	commit := args[0]
	recordPath, set := os.LookupEnv(WorktreeRecordEnv)
	if !set {
		fmt.Fprintln(stderr, "push-to-checkout: no record of hostd's pre-receive hook; not updating the worktree")
		return 1
	}
	recs, err := ReadRecords(recordPath)
	if err != nil {
		fmt.Fprintf(stderr, "push-to-checkout: %v\n", err)
		return 1
	}
	base, err := worktree.Base(wt)
	if err == nil {
		err = worktree.Ready(wt, base)
	}
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	if skipped(recs, wt, commit) {
		if err := worktree.MarkBehind(wt, base, commit); err != nil {
			fmt.Fprintln(stderr, err)
			return 1
		}
		return 0
	}
	if err := worktree.Update(wt, commit); err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	if err := worktree.ForgetBehind(wt); err != nil {
		fmt.Fprintf(stderr, "push-to-checkout: the worktree is updated, but %v\n", err)
	}
	return 0
}

// skipped reports whether recs say to leave wt as it is for commit.
func skipped(recs []Record, wt worktree.Worktree, commit string) bool {
	here, err := os.Stat(wt.Admin)
	if err != nil {
		return false
	}
	for _, r := range recs {
		if r.Action != GuardSkip || r.Commit != commit {
			continue
		}
		if there, err := os.Stat(r.Admin); err == nil && os.SameFile(here, there) {
			return true
		}
	}
	return false
}
