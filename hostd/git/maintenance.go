package git

import (
	"context"
	"os"
	"path/filepath"
	"time"

	"github.com/polecat-sidecar/sidecar/hostd/git/branch"
)

// How old a quarantine or temporary pack must be before it is removed: git
// removes its own when it finishes, so one this old belongs to a git that
// was killed. At start hostd runs no git, so only a minute's grace is left
// for one the operator may be running by hand.
const (
	leftoverAge      = time.Hour
	leftoverAgeStart = time.Minute
)

// removeAllLeftovers removes killed gits' leftovers in every rig's
// repository older than age.
func (s *Service) removeAllLeftovers(age time.Duration) {
	repos, _ := filepath.Glob(filepath.Join(s.cfg.Town, "*", ".repo.git"))
	for _, repo := range repos {
		removeLeftovers(repo, age, s.log.Warn)
	}
}

// reconcileEvery reconciles every rig at once and then every d until ctx
// ends.
func (s *Service) reconcileEvery(ctx context.Context, d time.Duration) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		s.reconcile(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// reconcile catches what a push that landed without its post-receive hook
// (hostd killed mid-push) left behind: each rig's polecat branches that
// differ from origin are queued for it, and leftovers of killed git
// processes are removed.
func (s *Service) reconcile(ctx context.Context) {
	repos, _ := filepath.Glob(filepath.Join(s.cfg.Town, "*", ".repo.git"))
	for _, repo := range repos {
		rig := filepath.Base(filepath.Dir(repo))
		if !validRig(rig) {
			continue
		}
		removeLeftovers(repo, leftoverAge, s.log.Warn)
		n, err := s.reconcileRig(ctx, rig, repo)
		switch {
		case err != nil:
			s.log.Warn("reconciling with origin failed; will try again", "rig", rig, "err", err)
		case n > 0:
			s.log.Info("reconciled with origin: queued polecat branches that differ", "rig", rig, "queued", n)
		}
	}
}

// reconcileRig asks the upstream queue to queue rig's polecat branches
// whose tip differs from origin's, returning how many it queued.
func (s *Service) reconcileRig(ctx context.Context, rig, repo string) (int, error) {
	patterns, known, err := s.rigPolicy(rig)
	if err != nil {
		return 0, err
	}
	policy, err := branch.ParsePatterns(patterns)
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.RefreshTimeout)
	defer cancel()
	return s.cfg.Upstream.Reconcile(ctx, rig, repo, func(branch string) (string, bool) { return policy.Owner(branch, known) })
}

// removeLeftovers removes quarantine directories and temporary packs of
// git processes that were killed (hostd was, mid-push), which git never
// cleans up.
func removeLeftovers(repo string, age time.Duration, warn func(string, ...any)) {
	var found []string
	for _, pat := range []string{"objects/tmp_objdir-incoming-*", "objects/incoming-*", "objects/pack/tmp_*"} {
		m, _ := filepath.Glob(filepath.Join(repo, pat))
		found = append(found, m...)
	}
	for _, p := range found {
		st, err := os.Lstat(p)
		if err != nil || time.Since(st.ModTime()) < age {
			continue
		}
		if err := os.RemoveAll(p); err != nil {
			warn("removing a killed git's leftover failed", "path", p, "err", err)
			continue
		}
		warn("removed a killed git's leftover", "path", p)
	}
}
