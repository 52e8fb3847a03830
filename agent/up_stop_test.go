package main

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/polecat-sidecar/sidecar/agent/data"
	"github.com/polecat-sidecar/sidecar/internal/parts"
)

// TestRunUntilStopped: serve's own error, or a part's, is the result; told
// to stop (a signal, or the caller's context), the parts' context ends and
// they are awaited for shutdownLimit at most, never longer, those still
// running then logged by name.
func TestRunUntilStopped(t *testing.T) {
	fatal, stuck := errors.New("certificate refused"), make(chan struct{})
	defer close(stuck)
	tests := []struct {
		name    string
		stop    func(cancel context.CancelFunc)
		setup   error                           // serve's own error, once the part is started
		part    func(ctx context.Context) error // the one part serve starts, "tunnel"
		want    error
		atLeast time.Duration
		wantLog string
	}{
		{name: "a part fails", part: func(context.Context) error { return fatal }, want: fatal},
		{name: "serve fails", setup: fatal, part: func(ctx context.Context) error { <-ctx.Done(); return nil }, want: fatal},
		{name: "SIGTERM, stops at once", stop: func(context.CancelFunc) { _ = syscall.Kill(syscall.Getpid(), syscall.SIGTERM) },
			part: func(ctx context.Context) error { <-ctx.Done(); return nil }},
		{name: "caller cancels, stops with an error", stop: func(cancel context.CancelFunc) { cancel() },
			part: func(ctx context.Context) error { <-ctx.Done(); return fatal }, want: fatal},
		{name: "SIGINT, stuck past the limit", stop: func(context.CancelFunc) { _ = syscall.Kill(syscall.Getpid(), syscall.SIGINT) },
			part: func(ctx context.Context) error { <-ctx.Done(); <-stuck; return fatal }, atLeast: shutdownLimit, wantLog: `"parts":["tunnel"]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var logs bytes.Buffer
			defer slog.SetDefault(slog.Default())
			slog.SetDefault(slog.New(slog.NewJSONHandler(&logs, nil)))
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
			err := runUntilStopped(ctx, func(ctx context.Context, p *parts.Group, _ *atomic.Pointer[data.Service]) error {
				p.Go("tunnel", tt.part)
				close(started)
				return tt.setup
			})
			took := time.Since(start)
			if tt.want == nil && err != nil || tt.want != nil && !errors.Is(err, tt.want) {
				t.Fatalf("runUntilStopped = %v, want %v", err, tt.want)
			}
			if took < tt.atLeast || took > tt.atLeast+2*time.Second {
				t.Fatalf("runUntilStopped took %v, want %v and not much more", took, tt.atLeast)
			}
			if tt.wantLog != "" && !strings.Contains(logs.String(), tt.wantLog) {
				t.Errorf("logged %s, want %s", logs.String(), tt.wantLog)
			}
		})
	}
}
