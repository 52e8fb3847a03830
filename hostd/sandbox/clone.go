package sandbox

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"

	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// Clone clones the rig into polecat id's sandbox, through its agent's git
// port, on branch when given (the polecat's branch, which Gas Town made in
// the rig's repository), unless a clone is there already. It reports
// whether it cloned.
func (r CLI) Clone(ctx context.Context, id wire.Identity, branch string) (bool, error) {
	if _, err := r.run(ctx, nil, "exec", Name(id), "test", "-e", WorkDir(id)+"/.git"); err == nil {
		return false, nil
	}
	args := []string{"exec", Name(id), "git", "clone", "-q"}
	if branch != "" {
		args = append(args, "-b", branch)
	}
	_, err := r.run(ctx, nil, append(args, "http://"+agentGit+wire.GitPathPrefix+id.Rig, WorkDir(id))...)
	return err == nil, err
}

// Switch is what Checkout did to bring a clone to its polecat's branch.
type Switch struct {
	// From and To are the clone's branch before and after ("" for a
	// detached HEAD); equal when it was on the branch already.
	From, To string
	// Stash is the commit of the stash entry that holds the uncommitted
	// work Checkout found (tracked changes and untracked files), "" when
	// there was none.
	Stash string
	// Unpushed is how many commits of From (or of the detached HEAD) no
	// branch on origin has: they stay on From, or on Kept.
	Unpushed int
	// Kept is the branch Checkout made for a detached HEAD's commits
	// origin lacks, "" when it made none.
	Kept string
}

// Checkout brings the clone in polecat id's sandbox to branch, the one Gas
// Town checked out in the polecat's worktree (a reused polecat gets a new
// branch there while its sandbox stays), fetched from the rig through the
// agent's git port. Uncommitted work goes into a stash entry, never into
// the new branch; commits on the old branch stay on it. A branch of ""
// (the worktree's HEAD detached) leaves the clone as it is.
// docs/migrating.md: "A reused polecat works on its new branch".
func (r CLI) Checkout(ctx context.Context, id wire.Identity, branch string) (Switch, error) {
	git := func(args ...string) (string, error) {
		out, err := r.run(ctx, nil, append([]string{"exec", Name(id), "git", "-C", WorkDir(id)}, args...)...)
		return strings.TrimSpace(out), err
	}
	from, _ := git("symbolic-ref", "-q", "--short", "HEAD")
	if from != "" && !isBranch(ctx, from) {
		return Switch{}, errors.New("the clone's HEAD names no branch git takes")
	}
	sw := Switch{From: from, To: from}
	if branch == "" || branch == from {
		return sw, nil
	}
	if !isBranch(ctx, branch) {
		return sw, fmt.Errorf("the worktree's branch %q is not a branch name git takes", branch)
	}
	local, remote := "refs/heads/"+branch, "refs/remotes/origin/"+branch
	if _, err := git("fetch", "-q", "origin", "+"+local+":"+remote); err != nil {
		return sw, fmt.Errorf("fetching %s from the rig: %w", branch, err)
	}
	if n, err := git("rev-list", "--count", "HEAD", "--not", "--remotes=origin"); err == nil {
		fmt.Sscan(n, &sw.Unpushed)
	}
	if from == "" && sw.Unpushed > 0 {
		// A detached HEAD's commits would be left to the reflog alone.
		head, err := git("rev-parse", "--verify", "HEAD")
		if err != nil || !isHex(head) {
			return sw, fmt.Errorf("naming the detached HEAD's commits: %w", err)
		}
		sw.Kept = "polecat-sidecar/detached-" + head[:12]
		if _, err := git("branch", "-f", sw.Kept, head); err != nil {
			return sw, fmt.Errorf("keeping the detached HEAD's commits on a branch: %w", err)
		}
	}
	if dirty, err := git("status", "--porcelain", "--untracked-files=all"); err != nil {
		return sw, fmt.Errorf("looking for uncommitted work: %w", err)
	} else if dirty != "" {
		msg := "polecat-sidecar: uncommitted work on " + cmp.Or(from, "a detached HEAD") + " when the session on " + branch + " started"
		if _, err := git("stash", "push", "-q", "--include-untracked", "-m", msg); err != nil {
			return sw, fmt.Errorf("keeping the uncommitted work in a stash: %w", err)
		}
		if sw.Stash, _ = git("rev-parse", "-q", "--verify", "refs/stash"); !isHex(sw.Stash) {
			sw.Stash = "stash@{0}"
		}
	}
	kept := ""
	if sw.Stash != "" {
		kept = " (the uncommitted work is in stash " + sw.Stash + ")"
	}
	if _, err := git("rev-parse", "-q", "--verify", local); err == nil {
		if _, err := git("checkout", "-q", branch); err != nil {
			return sw, fmt.Errorf("checking out %s%s: %w", branch, kept, err)
		}
		if _, err := git("merge", "-q", "--ff-only", remote); err != nil {
			// Back where it was, so that the next start tries again
			// rather than find the clone on the branch already.
			if from != "" {
				if _, rerr := git("checkout", "-q", from); rerr != nil {
					return sw, fmt.Errorf("bringing %s up to the rig's%s: %w (and going back to %s: %v)", branch, kept, err, from, rerr)
				}
			}
			return sw, fmt.Errorf("bringing %s up to the rig's%s: %w", branch, kept, err)
		}
	} else if _, err := git("checkout", "-q", "-b", branch, "--track", remote); err != nil {
		return sw, fmt.Errorf("checking out %s%s: %w", branch, kept, err)
	}
	sw.To = branch
	return sw, nil
}

// isBranch says whether name is a branch name git takes (and no option).
func isBranch(ctx context.Context, name string) bool {
	return !strings.HasPrefix(name, "-") && exec.CommandContext(ctx, "git", "check-ref-format", "--branch", name).Run() == nil
}

// isHex says whether s is a commit's full hexadecimal name.
func isHex(s string) bool {
	return (len(s) == 40 || len(s) == 64) && strings.Trim(s, "0123456789abcdef") == ""
}

// GitIdentity sets the git identity of polecat id's clone in its sandbox
// (its user.name and user.email, where empty values are left alone).
func (r CLI) GitIdentity(ctx context.Context, id wire.Identity, name, email string) error {
	for _, kv := range [][2]string{{"user.name", name}, {"user.email", email}} {
		if kv[1] == "" {
			continue
		}
		if _, err := r.run(ctx, nil, "exec", Name(id), "git", "-C", WorkDir(id), "config", kv[0], kv[1]); err != nil {
			return fmt.Errorf("setting %s in %s: %w", kv[0], Name(id), err)
		}
	}
	return nil
}

// agentGit is where gt-agent serves git in the container (its default
// --git-listen).
const agentGit = "127.0.0.1:9878"
