package main

import (
	"context"
	"errors"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/polecat-sidecar/sidecar/agent/data"
)

// TestRunUntilStopped: what serve returns on its own is the result; told
// to stop (a signal, or the caller's context), serve's context ends and
// its return is awaited for shutdownLimit at most, never longer.
func TestRunUntilStopped(t *testing.T) {
	fatal, stuck := errors.New("certificate refused"), make(chan struct{})
	defer close(stuck)
	tests := []struct {
		name    string
		stop    func(cancel context.CancelFunc)
		serve   func(ctx context.Context) error
		want    error
		atLeast time.Duration
	}{
		{"ends on its own", nil, func(context.Context) error { return fatal }, fatal, 0},
		{"SIGTERM, stops at once", func(context.CancelFunc) { _ = syscall.Kill(syscall.Getpid(), syscall.SIGTERM) },
			func(ctx context.Context) error { <-ctx.Done(); return nil }, nil, 0},
		{"caller cancels, stops with an error", func(cancel context.CancelFunc) { cancel() },
			func(ctx context.Context) error { <-ctx.Done(); return fatal }, fatal, 0},
		{"SIGINT, stuck past the limit", func(context.CancelFunc) { _ = syscall.Kill(syscall.Getpid(), syscall.SIGINT) },
			func(ctx context.Context) error { <-ctx.Done(); <-stuck; return fatal }, nil, shutdownLimit},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			started := make(chan struct{})
			go func() {
				<-started
				if tt.stop != nil {
					tt.stop(cancel)
				}
			}()
			start := time.Now()
			err := runUntilStopped(ctx, func(ctx context.Context, _ *atomic.Pointer[data.Service]) error {
				close(started)
				return tt.serve(ctx)
			})
			took := time.Since(start)
			if err != tt.want {
				t.Fatalf("runUntilStopped = %v, want %v", err, tt.want)
			}
			if took < tt.atLeast || took > tt.atLeast+2*time.Second {
				t.Fatalf("runUntilStopped took %v, want %v and not much more", took, tt.atLeast)
			}
		})
	}
}
