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
	"github.com/polecat-sidecar/sidecar/internal/parts"
)

// shutdownLimit is how long the agent takes at most to stop once told to.
const shutdownLimit = time.Second

// runUntilStopped has serve start up's parts in one parts.Group and runs
// them until one fails, or SIGINT, SIGTERM or ctx stops them; a signal
// first gives the data service (once serve has stored it) its final
// upload. The parts then have shutdownLimit to return; those still
// running are logged by name and left to the process's exit. It returns
// serve's error, else the first part's.
func runUntilStopped(ctx context.Context, serve func(context.Context, *parts.Group, *atomic.Pointer[data.Service]) error) error {
	sigCtx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	runCtx, stopRun := context.WithCancel(ctx)
	defer stopRun()
	p, pctx := parts.New(runCtx, slog.Default())
	var dataSvc atomic.Pointer[data.Service]
	p.Go("signals", func(pctx context.Context) error {
		select {
		case <-sigCtx.Done():
			if d := dataSvc.Load(); d != nil && ctx.Err() == nil && pctx.Err() == nil {
				d.Teardown()
			}
			stopRun()
		case <-pctx.Done():
		}
		return nil
	})
	err := serve(pctx, p, &dataSvc)
	if err == nil {
		<-pctx.Done() // stopped, or a part failed
	}
	if runCtx.Err() != nil {
		announceStop()
	}
	if stopErr := p.Stop(shutdownLimit); err == nil {
		err = stopErr
	}
	return err
}

func announceStop() {
	slog.Info("stopping: closing the tunnel (hostd is told why), the gt/bd socket and the git port; the polecat's tmux session keeps running")
}
