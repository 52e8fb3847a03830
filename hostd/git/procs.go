package git

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/polecat-sidecar/sidecar/internal/limits"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// procGate bounds the git processes hostd runs for polecats, in all and per
// polecat: each held request (an unfinished upload, a slow reader) is a
// process, and a polecat must not be able to start hundreds.
type procGate struct {
	total      chan struct{}
	perPolecat int
	wait       time.Duration

	mu sync.Mutex
	by map[wire.Identity]chan struct{}
}

func newProcGate(total, perPolecat int, wait time.Duration) *procGate {
	return &procGate{total: make(chan struct{}, total), perPolecat: perPolecat, wait: wait, by: map[wire.Identity]chan struct{}{}}
}

// acquire takes a place for one git process of id, waiting up to the
// gate's wait; release gives it back.
func (g *procGate) acquire(ctx context.Context, id wire.Identity) (release func(), err error) {
	g.mu.Lock()
	mine := g.by[id]
	if mine == nil {
		mine = make(chan struct{}, g.perPolecat)
		g.by[id] = mine
	}
	g.mu.Unlock()
	t := time.NewTimer(g.wait)
	defer t.Stop()
	select {
	case mine <- struct{}{}:
	case <-t.C:
		limits.Hit(limits.GitProcesses)
		return nil, fmt.Errorf("too many git requests from this polecat at once (git.max_processes_per_polecat: %d); try again", g.perPolecat)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	select {
	case g.total <- struct{}{}:
	case <-t.C:
		<-mine
		limits.Hit(limits.GitProcesses)
		return nil, fmt.Errorf("hostd is running its most git processes (git.max_processes: %d); try again", cap(g.total))
	case <-ctx.Done():
		<-mine
		return nil, ctx.Err()
	}
	return func() { <-g.total; <-mine }, nil
}
