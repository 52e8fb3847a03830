package upstream

import (
	"context"
	"log/slog"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// refreshSpecs fetch origin's branches and tags fast-forward only (no '+'),
// never touching polecat branches: a refresh can neither rewind nor delete
// a branch, nor overwrite what a polecat pushed and origin has not yet.
// Branches checked out in a worktree of the repository are left out too
// (checkedOut).
var refreshSpecs = []string{"refs/heads/*:refs/heads/*", "^refs/heads/polecat/*", "refs/tags/*:refs/tags/*"}

// checkedOut is the negative refspecs of the branches checked out in
// repo's worktrees. git refuses a fetch that would move one (and with it
// the whole fetch): Gas Town keeps the rig's default branch checked out
// in <rig>/refinery/rig, a worktree of .repo.git, and moves it itself
// when the refinery merges; moving it under the refinery would leave its
// working tree behind its HEAD.
func checkedOut(ctx context.Context, repo string, env []string) []string {
	cmd := exec.CommandContext(ctx, "git", "-C", repo, "worktree", "list", "--porcelain")
	cmd.Env = env
	out, err := cmd.Output()
	if err != nil {
		return nil
	}
	var specs []string
	for _, line := range strings.Split(string(out), "\n") {
		if ref, ok := strings.CutPrefix(line, "branch "); ok && strings.HasPrefix(ref, "refs/heads/") {
			specs = append(specs, "^"+ref)
		}
	}
	return specs
}

// Refresher keeps each repository no staler than age before a fetch is
// served from it, one refresh at a time per repository.
type Refresher struct {
	age, timeout time.Duration
	env          []string
	log          *slog.Logger

	mu    sync.Mutex
	repos map[string]*repoState
}

type repoState struct {
	mu   sync.Mutex
	last time.Time
}

// NewRefresher refreshes a repository older than age (negative: never),
// giving up on one refresh after timeout; git runs with env.
func NewRefresher(age, timeout time.Duration, env []string, log *slog.Logger) *Refresher {
	return &Refresher{age: age, timeout: timeout, env: env, log: log, repos: map[string]*repoState{}}
}

// Maybe refreshes repo from its origin remote if the last refresh is older
// than age. Concurrent callers wait for the refresh under way rather than
// start another. Failures are logged, and the fetch is served from what is
// there.
func (r *Refresher) Maybe(ctx context.Context, repo string, env []string) {
	if r.age < 0 {
		return
	}
	r.mu.Lock()
	st := r.repos[repo]
	if st == nil {
		st = &repoState{}
		r.repos[repo] = st
	}
	r.mu.Unlock()
	st.mu.Lock()
	defer st.mu.Unlock()
	if time.Since(st.last) < r.age {
		return
	}
	st.last = time.Now()
	if exec.Command("git", "-C", repo, "remote", "get-url", "origin").Run() != nil {
		return // no origin: nothing to refresh from
	}
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	args := append([]string{"-C", repo, "fetch", "--quiet", "--no-write-fetch-head", "origin"}, refreshSpecs...)
	args = append(args, checkedOut(ctx, repo, env)...)
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Env = env
	start := time.Now()
	out, err := cmd.CombinedOutput()
	if err != nil {
		r.log.Warn("refreshing from origin failed; serving the fetch from what is there", "repo", repo, "after", time.Since(start).Round(time.Millisecond), "err", err, "git", strings.TrimSpace(string(out)))
		return
	}
	r.log.Debug("refreshed from origin", "repo", repo, "took", time.Since(start).Round(time.Millisecond))
}
