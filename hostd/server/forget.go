package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/polecat-sidecar/sidecar/hostd/api"
	"github.com/polecat-sidecar/sidecar/hostd/liveness"
	"github.com/polecat-sidecar/sidecar/hostd/nudge"
	"github.com/polecat-sidecar/sidecar/hostd/registry"
	"github.com/polecat-sidecar/sidecar/hostd/sandbox"
	"github.com/polecat-sidecar/sidecar/hostd/state"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// Forgetting a polecat (hostd forget; hostd nuke and the reaper, once its
// sandbox is removed and its certificates revoked) removes what hostd
// keeps of it, all at once, but its certificates, revocations, landed
// branches and journal lines: Gas Town gives a nuked polecat's name to its
// next polecat, which must not inherit another's state. What goes, what
// stays and why: docs/liveness.md, "hostd forget".

// forgottenDetail is the outcome's detail of a nudge cancelled by Forget.
const forgottenDetail = "cancelled: hostd forgot the polecat (hostd forget, or it was nuked)"

// reapForgetWait is how long the reaper's Forget of a nuked polecat waits
// for the tunnel its revocation closed to be down.
const reapForgetWait = 10 * time.Second

// forgetPoll is how often Forget looks again at a polecat whose tunnel is
// being closed.
const forgetPoll = 20 * time.Millisecond

// Forget removes what hostd keeps of the polecat but its certificates,
// revocations and landed branches, and says what it removed. A polecat
// whose tunnel is up is refused, with nothing removed: at once with wait
// 0, else once wait has passed (a tunnel closed by a revocation just made
// is down within moments, but the registry tells liveness after).
func (s *Server) Forget(ctx context.Context, id wire.Identity, wait time.Duration) (api.Forgotten, error) {
	if err := id.Validate(); err != nil {
		return api.Forgotten{}, err
	}
	f := api.Forgotten{Polecat: api.Identity(id), Removed: []string{}}
	deadline := time.Now().Add(wait)
	for {
		row, ok, err := s.live.Forget(id)
		if err == nil {
			if ok {
				f.Listed, f.Last = true, &row
			}
			break
		}
		if !time.Now().Before(deadline) {
			return f, err
		}
		select {
		case <-ctx.Done():
			return f, fmt.Errorf("%w (while waiting for its tunnel to close: %w)", err, ctx.Err())
		case <-time.After(forgetPoll):
		}
	}
	var errs []error
	n, err := s.nudge.CancelPolecat(id, forgottenDetail)
	f.Nudges, errs = n, append(errs, err)
	if removed, err := s.data.Forget(ctx, id); removed {
		f.Removed = append(f.Removed, s.dir.PolecatData(id))
	} else if err != nil {
		errs = append(errs, fmt.Errorf("removing its data base: %w", err))
	}
	removed, err := forgetFiles(s.dir, id)
	f.Removed = append(f.Removed, removed...)
	if err = errors.Join(append(errs, err)...); err != nil {
		err = fmt.Errorf("forgetting %s: %w", id, err)
	}
	s.log.Info("polecat forgotten", "polecat", id, "listed", f.Listed, "nudges_cancelled", f.Nudges, "removed", f.Removed, "err", err)
	return f, err
}

// ForgetStopped is Forget for a town whose hostd is not running (hostd
// nuke then): it takes the polecat out of the files the services would
// load at their next start.
func ForgetStopped(town string, id wire.Identity, log *slog.Logger) (api.Forgotten, error) {
	if err := id.Validate(); err != nil {
		return api.Forgotten{}, err
	}
	dir := state.For(town)
	reg, err := registry.New(registry.Config{Logger: log})
	if err != nil {
		return api.Forgotten{}, err
	}
	live, err := liveness.New(liveness.Config{Path: dir.Liveness(), Logger: log}, reg)
	if err != nil {
		return api.Forgotten{}, err
	}
	nudges, err := nudge.New(nudge.Config{Path: dir.Nudges(), Logger: log}, reg)
	if err != nil {
		return api.Forgotten{}, err
	}
	f := api.Forgotten{Polecat: api.Identity(id), Removed: []string{}}
	row, ok, err := live.Forget(id) // nothing is connected: hostd is not running
	if ok && err == nil {
		f.Listed, f.Last = true, &row
	}
	errs := []error{err}
	f.Nudges, err = nudges.CancelPolecat(id, forgottenDetail)
	errs = append(errs, err)
	removed, err := forgetFiles(dir, id)
	f.Removed = append(f.Removed, removed...)
	if err = errors.Join(append(errs, err)...); err != nil {
		return f, fmt.Errorf("forgetting %s: %w", id, err)
	}
	return f, nil
}

// forgetFiles removes the polecat's own directories of the runtime
// directory, the pane record of a hostd run that has ended and the
// record of a start that failed.
func forgetFiles(dir state.Dir, id wire.Identity) ([]string, error) {
	removed, err := dir.RemovePolecat(id)
	pane, perr := (&sandbox.Panes{Dir: dir.Panes()}).Prune(id)
	if pane != "" {
		removed = append(removed, pane)
	}
	starts := &sandbox.Starts{Dir: dir.StartFailures()}
	failed, serr := starts.Started(id)
	if failed {
		removed = append(removed, starts.File(id))
	}
	return removed, errors.Join(err, perr, serr)
}
