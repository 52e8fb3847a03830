package hook

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/polecat-sidecar/sidecar/hostd/git/worktree"
)

// checkCheckouts refuses the push when a branch it updates is checked out
// in a worktree of the repository (a polecat's host worktree), where git
// writes its new tree, and that tree is over the bounds hostd passed or
// would change what host processes run or follow there; with
// git.worktree_guard=skip the latter lands, recorded for push-to-checkout.
// It returns the exit status. docs/security.md ("Other polecats' branches,
// and main") says why each check.
func checkCheckouts(updates []update, stderr io.Writer) int {
	gitDir := os.Getenv("GIT_DIR") // the hook runs in the repository, and git sets it
	if gitDir == "" {
		gitDir = "."
	}
	checked, err := worktree.CheckedOut(gitDir)
	if err != nil {
		fmt.Fprintf(stderr, "push refused: %v\n", err)
		return 1
	}
	var bounds *worktree.Bounds
	mode := ""
	var recs []Record
	for _, u := range updates {
		wts := checked[u.ref]
		if len(wts) == 0 || strings.Trim(u.newID, "0") == "" {
			continue // checked out nowhere, or deleted, which git refuses for a checked-out branch
		}
		if bounds == nil {
			b, err := checkoutBoundsFromEnv()
			if err != nil {
				fmt.Fprintf(stderr, "push refused: %s is checked out in a host worktree and hostd gave no valid bounds for it (%v)\n", u.ref, err)
				return 1
			}
			bounds = &b
			if mode = os.Getenv(WorktreeGuardEnv); mode != GuardRefuse && mode != GuardSkip {
				fmt.Fprintf(stderr, "push refused: %s is checked out in a host worktree and hostd gave no valid %s (%s is %q)\n", u.ref, worktreeGuardSetting, WorktreeGuardEnv, mode)
				return 1
			}
		}
		g, err := worktree.NewGuard(wts)
		if err != nil {
			fmt.Fprintf(stderr, "push refused: %s is checked out in a host worktree: %v\n", u.ref, err)
			return 1
		}
		setting, why, err := bounds.Over(u.newID, g.Visit)
		if err == nil && setting == "" {
			err = g.Finish()
		}
		if err != nil {
			fmt.Fprintf(stderr, "push refused: %s is checked out in a host worktree: %v\n", u.ref, err)
			return 1
		}
		if setting != "" {
			fmt.Fprintf(stderr, "refusing %s: it is checked out in a host worktree, which this push would update, and %s, over %s\n", u.ref, why, setting)
			fmt.Fprintf(stderr, "push refused: over %s; nothing was changed\n", setting)
			recordLimit(setting)
			return 1
		}
		for _, wt := range wts {
			if wt.Dir == "" {
				continue
			}
			rec, err := judgeWorktree(g, wt, u, mode)
			if err != nil {
				fmt.Fprintf(stderr, "push refused: %s is checked out in a host worktree: %v\n", u.ref, err)
				return 1
			}
			if rec == nil {
				continue
			}
			recs = append(recs, *rec)
			if mode == GuardRefuse {
				fmt.Fprintf(stderr, "refusing %s: it is checked out in a host worktree, which this push would update, and there it would change what host processes run or follow (%s=%s):\n%s", u.ref, worktreeGuardSetting, mode, listPaths(*rec))
				fmt.Fprintf(stderr, "push refused: nothing was changed. A branch of yours checked out nowhere on the host takes these commits.\n")
				return finishRecords(recs, 1, stderr)
			}
			fmt.Fprintf(stderr, "%s lands, but its host worktree is not updated (%s=%s): there this push would change what host processes run or follow:\n%s", u.ref, worktreeGuardSetting, mode, listPaths(*rec))
		}
	}
	return finishRecords(recs, 0, stderr)
}

// maxListed bounds the paths one record lists.
const maxListed = 10

// judgeWorktree judges u's commit, which g has been fed, for the worktree
// wt; with GuardSkip it first refuses a worktree that cannot take a push
// at all, as push-to-checkout would, with git's words. It returns the
// record of what the guard refused or skipped, nil when it found nothing.
func judgeWorktree(g *worktree.Guard, wt worktree.Worktree, u update, mode string) (*Record, error) {
	if mode == GuardSkip {
		base, err := worktree.Base(wt)
		if err == nil {
			err = worktree.Ready(wt, base)
		}
		if err != nil {
			return nil, err
		}
	}
	vs, err := g.Judge(wt)
	if err != nil || len(vs) == 0 {
		return nil, err
	}
	rec := &Record{Action: mode, Ref: u.ref, Commit: u.newID, Worktree: wt.Dir, Admin: wt.Admin}
	for i, v := range vs {
		if i == maxListed {
			rec.More = len(vs) - i
			break
		}
		rec.Paths = append(rec.Paths, v.String())
	}
	return rec, nil
}

// listPaths is rec's paths, one a line, for the pushing polecat.
func listPaths(rec Record) string {
	var b strings.Builder
	for _, p := range rec.Paths {
		fmt.Fprintf(&b, "  %s\n", p)
	}
	if rec.More > 0 {
		fmt.Fprintf(&b, "  and %d more\n", rec.More)
	}
	return b.String()
}

// finishRecords writes recs to the file hostd named and returns code; a
// push whose records cannot be written is refused, since push-to-checkout
// skips only what they list.
func finishRecords(recs []Record, code int, stderr io.Writer) int {
	if err := writeRecords(os.Getenv(WorktreeRecordEnv), recs); err != nil {
		fmt.Fprintf(stderr, "push refused: %v\n", err)
		return 1
	}
	return code
}

// recordLimit writes the setting a push went over to the file hostd named,
// if it named one.
func recordLimit(setting string) {
	if path := os.Getenv(LimitEnv); path != "" {
		_ = os.WriteFile(path, []byte(setting+"\n"), 0o600)
	}
}

// checkoutBoundsFromEnv reads the bounds hostd passes the hook.
func checkoutBoundsFromEnv() (worktree.Bounds, error) {
	var b worktree.Bounds
	for _, v := range []struct {
		env string
		to  *int64
	}{{MaxCheckoutSizeEnv, &b.Size}, {MaxCheckoutFilesEnv, &b.Files}} {
		n, err := strconv.ParseInt(os.Getenv(v.env), 10, 64)
		if err != nil || n <= 0 {
			return worktree.Bounds{}, fmt.Errorf("%s is %q, want a number above 0", v.env, os.Getenv(v.env))
		}
		*v.to = n
	}
	return b, nil
}
