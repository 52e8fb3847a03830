//go:build linux

package main

import (
	"context"
	"log/slog"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/polecat-sidecar/sidecar/agent/data"
)

// shutdownLimit is how long the agent takes at most to stop once told to.
const shutdownLimit = time.Second

// runUntilStopped runs serve until it returns or SIGINT or SIGTERM stops
// it. A signal first gives the data service (once serve has stored it)
// its final upload, when it has anything to send, then cancels serve's
// context and says what stopping closes; serve then has shutdownLimit to
// return, after which runUntilStopped returns nil without it (the
// process exits).
func runUntilStopped(ctx context.Context, serve func(context.Context, *atomic.Pointer[data.Service]) error) error {
	sigCtx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	ctx, cancelRun := context.WithCancel(ctx)
	defer cancelRun()
	var dataSvc atomic.Pointer[data.Service]
	finished, result := make(chan struct{}), make(chan error, 1)
	defer close(finished)
	go func() {
		select {
		case <-sigCtx.Done():
			if d := dataSvc.Load(); d != nil && ctx.Err() == nil {
				d.Teardown()
			}
			cancelRun()
		case <-finished:
		}
	}()
	go func() { result <- serve(ctx, &dataSvc) }()
	select {
	case err := <-result:
		if err != nil || ctx.Err() == nil {
			return err // ended on its own
		}
		announceStop()
		return nil
	case <-ctx.Done():
	}
	announceStop()
	select {
	case err := <-result:
		return err
	case <-time.After(shutdownLimit):
		slog.Warn("stopping took longer than " + shutdownLimit.String() + "; exiting now")
		return nil
	}
}

func announceStop() {
	slog.Info("stopping: closing the tunnel (hostd is told why), the gt/bd socket and the git port; the polecat's tmux session keeps running")
}
