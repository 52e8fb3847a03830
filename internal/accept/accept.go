// Package accept is the accept loop of every listener the binaries serve
// (the tunnel's TCP port, the agent's shim, git and hook sockets): a failed
// accept, such as running out of file descriptors, is retried after a
// backoff, neither spinning nor ending the loop.
package accept

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"time"
)

// Backoff is the wait after the n-th consecutive failed accept (from 0):
// 5 ms doubling to 1 s, as net/http does, so that a listener out of file
// descriptors recovers as soon as some are closed without spinning.
func Backoff(n int) time.Duration {
	return min(5*time.Millisecond<<min(n, 8), time.Second)
}

// Loop describes an accept loop.
type Loop struct {
	// Name starts its log lines ("tunnel", "hook socket").
	Name string
	// Logger hears of the first failed accept in a row and of every
	// hundredth, and of the recovery; slog.Default() when nil.
	Logger *slog.Logger
	// Failed, when set, hears of every failed accept.
	Failed func(err error)
}

// Serve accepts connections on ln and gives each to handle, on the
// loop's goroutine: handle starts a goroutine of its own for anything
// that takes time. A failed accept is retried after Backoff. Serve
// returns nil once ctx has ended (the caller closes ln to end the loop),
// and otherwise the error that ended it: net.ErrClosed, ln having been
// closed.
func (lp Loop) Serve(ctx context.Context, ln net.Listener, handle func(net.Conn)) error {
	log := lp.Logger
	if log == nil {
		log = slog.Default()
	}
	failures := 0
	for {
		c, err := ln.Accept()
		if err == nil {
			if failures > 0 {
				log.Info(lp.Name+": accepting again", "after_failures", failures)
				failures = 0
			}
			handle(c)
			continue
		}
		if ctx.Err() != nil {
			return nil
		}
		if errors.Is(err, net.ErrClosed) {
			return err
		}
		wait := Backoff(failures)
		failures++
		if lp.Failed != nil {
			lp.Failed(err)
		}
		if failures == 1 || failures%100 == 0 {
			log.Warn(lp.Name+": accept failed; retrying", "err", err, "failures", failures, "retry_in", wait)
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return nil
		}
	}
}
