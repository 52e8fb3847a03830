package upstream

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
)

// Reconcile catches what a push that landed without its post-receive hook
// (hostd killed mid-push) left behind: rig's polecat branches in repo
// whose tip differs from origin's are queued, each for the polecat owner
// names (branches it names no owner for are not polecats' and stay).
// ls-remote gives up when ctx ends. It returns how many were queued.
func (u *Queue) Reconcile(ctx context.Context, rig, repo string, owner func(branch string) (string, bool)) (int, error) {
	local, err := exec.CommandContext(ctx, "git", "-C", repo, "for-each-ref", "--format=%(objectname) %(refname)", "refs/heads/").Output()
	if err != nil {
		return 0, fmt.Errorf("listing %s's branches: %w", repo, err)
	}
	remote, err := exec.CommandContext(ctx, "git", "-C", repo, "ls-remote", "--heads", "origin").Output()
	if err != nil {
		return 0, fmt.Errorf("listing origin's branches of %s: %w", repo, err)
	}
	theirs := refTips(string(remote))
	byOwner := map[string][]string{}
	for ref, sha := range refTips(string(local)) {
		branch := strings.TrimPrefix(ref, "refs/heads/")
		if o, ok := owner(branch); ok && theirs[ref] != sha {
			byOwner[o] = append(byOwner[o], branch)
		}
	}
	n := 0
	for o, branches := range byOwner {
		n += u.Enqueue(rig, o, branches...)
	}
	return n, nil
}

// refTips reads "<sha> <ref>" lines (ls-remote separates with a tab).
func refTips(out string) map[string]string {
	tips := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) == 2 {
			tips[f[1]] = f[0]
		}
	}
	return tips
}
