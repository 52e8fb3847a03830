// Package parts is the one owner of a daemon's goroutines (hostd serve's,
// gt-agent up's): each runs as a named part of a Group, the first part to
// fail ends the others and is what Stop returns, and Stop waits for every
// part, up to a bound past which it logs the parts still running by name.
// It is errgroup's idea with names, so that a part that does not stop in
// time can be told.
package parts

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"
)

// Group is the parts one daemon runs.
type Group struct {
	ctx    context.Context
	cancel context.CancelFunc
	log    *slog.Logger

	wg      sync.WaitGroup
	mu      sync.Mutex
	running map[string]int // name -> how many of that name run
	err     error          // the first part's error
}

// New is a group whose parts run under the context it returns, which
// ends when parent does or a part fails; the daemon waits on it, then
// calls Stop. log hears of the parts that outlive Stop's bound.
func New(parent context.Context, log *slog.Logger) (*Group, context.Context) {
	ctx, cancel := context.WithCancel(parent)
	return &Group{ctx: ctx, cancel: cancel, log: log, running: map[string]int{}}, ctx
}

// Go runs f as the part name; an error from f ends every part. A part
// may start others (a session of an accept loop) until Stop returns.
func (g *Group) Go(name string, f func(ctx context.Context) error) {
	g.mu.Lock()
	g.running[name]++
	g.mu.Unlock()
	g.wg.Go(func() {
		err := f(g.ctx)
		g.mu.Lock()
		if g.running[name]--; g.running[name] == 0 {
			delete(g.running, name)
		}
		if err != nil && g.err == nil {
			g.err = fmt.Errorf("%s: %w", name, err)
		}
		g.mu.Unlock()
		if err != nil {
			g.cancel()
		}
	})
}

// Stop ends every part and waits for them, at most bound; it logs the
// parts still running then (and returns without them), and returns the
// first part's error.
func (g *Group) Stop(bound time.Duration) error {
	g.cancel()
	done := make(chan struct{})
	go func() { g.wg.Wait(); close(done) }()
	t := time.NewTimer(bound)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		g.log.Error("stopping: parts still running after the shutdown bound; exiting without them",
			"bound", bound, "parts", g.stillRunning())
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.err
}

// stillRunning names the parts running now, sorted.
func (g *Group) stillRunning() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	names := make([]string, 0, len(g.running))
	for name, n := range g.running {
		if n > 1 {
			name = fmt.Sprintf("%s (%d)", name, n)
		}
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// UntilDone is a part of f, which runs until ctx ends and has no error.
func UntilDone(f func(ctx context.Context)) func(context.Context) error {
	return func(ctx context.Context) error { f(ctx); return nil }
}
