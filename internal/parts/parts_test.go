package parts

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// TestGroup: the first part to fail ends the others and is what Stop
// returns, named; a part that does not stop within the bound is logged by
// name and left behind, Stop returning at the bound.
func TestGroup(t *testing.T) {
	for _, c := range []struct {
		name    string
		parts   map[string]func(ctx context.Context, release <-chan struct{}) error
		wantErr string // "" for none
		wantLog string // "" for no log line
	}{
		{
			name: "all stop",
			parts: map[string]func(context.Context, <-chan struct{}) error{
				"a": func(ctx context.Context, _ <-chan struct{}) error { <-ctx.Done(); return nil },
				"b": func(ctx context.Context, _ <-chan struct{}) error {
					return UntilDone(func(ctx context.Context) { <-ctx.Done() })(ctx)
				},
			},
		},
		{
			name: "first failure ends the rest",
			parts: map[string]func(context.Context, <-chan struct{}) error{
				"failing": func(context.Context, <-chan struct{}) error { return errors.New("boom") },
				"waiting": func(ctx context.Context, _ <-chan struct{}) error { <-ctx.Done(); return nil },
			},
			wantErr: "failing: boom",
		},
		{
			name: "stuck part logged at the bound",
			parts: map[string]func(context.Context, <-chan struct{}) error{
				"stuck":  func(_ context.Context, release <-chan struct{}) error { <-release; return nil },
				"prompt": func(ctx context.Context, _ <-chan struct{}) error { <-ctx.Done(); return nil },
			},
			wantLog: `"parts":["stuck"]`,
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			var logs bytes.Buffer
			release := make(chan struct{})
			g, ctx := New(context.Background(), slog.New(slog.NewJSONHandler(&logs, nil)))
			for name, f := range c.parts {
				g.Go(name, func(ctx context.Context) error { return f(ctx, release) })
			}
			t.Cleanup(func() { close(release); g.wg.Wait() })
			if c.wantErr != "" {
				select {
				case <-ctx.Done():
				case <-time.After(10 * time.Second):
					t.Fatal("a failed part did not end the others' context")
				}
			}
			const bound = 200 * time.Millisecond
			start := time.Now()
			err := g.Stop(bound)
			if c.wantErr == "" && err != nil || c.wantErr != "" && (err == nil || err.Error() != c.wantErr) {
				t.Errorf("Stop: %v, want %q", err, c.wantErr)
			}
			if c.wantLog == "" {
				if logs.Len() != 0 {
					t.Errorf("logged %s, want nothing", logs.String())
				}
				return
			}
			if took := time.Since(start); took < bound {
				t.Errorf("Stop returned after %v, before the bound %v", took, bound)
			}
			if !strings.Contains(logs.String(), c.wantLog) {
				t.Errorf("logged %s, want %s", logs.String(), c.wantLog)
			}
		})
	}
}
