package git

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/polecat-sidecar/sidecar/hostd/limits"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// procGate bounds the git processes hostd runs for polecats, in all and per
// polecat: each held request (an unfinished upload, a slow reader) is a
// process, and a polecat must not be able to start hundreds.
type procGate struct {
	total      limits.Pool
	mine       *limits.Slots
	perPolecat int
	wait       time.Duration
}

func newProcGate(total, perPolecat int, wait time.Duration) *procGate {
	return &procGate{total: limits.NewPool(total), mine: limits.NewSlots(perPolecat), perPolecat: perPolecat, wait: wait}
}

// acquire takes a place for one git process of id, waiting up to the
// gate's wait in all; release gives it back.
func (g *procGate) acquire(ctx context.Context, id wire.Identity) (release func(), err error) {
	deadline := time.Now().Add(g.wait)
	mine, err := g.mine.Take(ctx, id, g.wait)
	if errors.Is(err, limits.ErrBusy) {
		limits.Hit(limits.GitProcesses)
		return nil, fmt.Errorf("too many git requests from this polecat at once (git.max_processes_per_polecat: %d); try again", g.perPolecat)
	}
	if err != nil {
		return nil, err
	}
	all, err := g.total.Take(ctx, time.Until(deadline))
	if errors.Is(err, limits.ErrBusy) {
		mine()
		limits.Hit(limits.GitProcesses)
		return nil, fmt.Errorf("hostd is running its most git processes (git.max_processes: %d); try again", cap(g.total))
	}
	if err != nil {
		mine()
		return nil, err
	}
	return func() { all(); mine() }, nil
}
