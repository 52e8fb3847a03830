package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"
)

// shutdownWait bounds how long Run waits, once its context has ended or a
// part has failed, for its parts (sessions among them) to return; a part
// still running then is logged by name and left behind, so that a stuck
// part cannot keep hostd from exiting.
const shutdownWait = 5 * time.Second

// parts are the goroutines Run starts, each under a name: the first to
// fail ends the others (their context is cancelled) and is what Run
// returns; wait waits for all of them. It is errgroup's idea, with names,
// so that a part that does not stop in time can be told.
type parts struct {
	ctx    context.Context
	cancel context.CancelFunc
	log    *slog.Logger

	wg      sync.WaitGroup
	mu      sync.Mutex
	running map[string]int // name -> how many of that name run
	err     error          // the first part's error
}

// newParts is a group whose parts run under a context ended by parent or
// by the first failure.
func newParts(parent context.Context, log *slog.Logger) *parts {
	ctx, cancel := context.WithCancel(parent)
	return &parts{ctx: ctx, cancel: cancel, log: log, running: map[string]int{}}
}

// Go runs f as the part name; an error from f ends every part.
func (p *parts) Go(name string, f func(ctx context.Context) error) {
	p.mu.Lock()
	p.running[name]++
	p.mu.Unlock()
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		err := f(p.ctx)
		p.mu.Lock()
		if p.running[name]--; p.running[name] == 0 {
			delete(p.running, name)
		}
		if err != nil && p.err == nil {
			p.err = fmt.Errorf("%s: %w", name, err)
		}
		p.mu.Unlock()
		if err != nil {
			p.cancel()
		}
	}()
}

// stop ends every part and waits for them, at most bound; it logs the
// parts still running then, and returns the first part's error.
func (p *parts) stop(bound time.Duration) error {
	p.cancel()
	done := make(chan struct{})
	go func() { p.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(bound):
		p.log.Error("hostd stopping: parts still running after the shutdown bound; exiting without them",
			"bound", bound, "parts", p.stillRunning())
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// stillRunning names the parts running now, sorted.
func (p *parts) stillRunning() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	names := make([]string, 0, len(p.running))
	for name, n := range p.running {
		if n > 1 {
			name = fmt.Sprintf("%s (%d)", name, n)
		}
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// serveHTTP serves srv on ln until ctx ends, then shuts it down: it
// waits for the handlers in progress, whose requests' context is ctx, so
// that they see it end (parts.stop bounds that wait, naming the server if
// one does not return). An error of Serve's own, before ctx ended, is
// returned; a hijacked connection (pane attach) is its handler's to end.
func serveHTTP(ctx context.Context, srv *http.Server, ln net.Listener) error {
	srv.BaseContext = func(net.Listener) context.Context { return ctx }
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return fmt.Errorf("serving on %s stopped: %w", ln.Addr(), err)
	case <-ctx.Done():
	}
	shutErr := srv.Shutdown(context.WithoutCancel(ctx))
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return errors.Join(err, shutErr)
	}
	return shutErr
}
