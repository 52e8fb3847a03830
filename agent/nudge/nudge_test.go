package nudge

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/polecat-sidecar/sidecar/agent/tmux"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// TestDeliverDeadlineBetweenIdleLooks: a wait-idle nudge needs idle seen
// twice; when its deadline (or hostd withdrawing it) comes after the first
// look, it is busy and nothing is typed.
func TestDeliverDeadlineBetweenIdleLooks(t *testing.T) {
	dir := t.TempDir()
	srv := tmux.Server{Args: []string{"-S", filepath.Join(dir, "tmux.sock")}}
	t.Cleanup(func() { _ = exec.Command("tmux", append(srv.Args, "kill-server")...).Run() })
	if err := srv.NewSession(context.Background(), "polecat", []string{"sh", "-c", "printf '> '; sleep 60"}, nil); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // the prompt is drawn
	s, err := New(Config{Session: "polecat", Tmux: srv, StateDir: dir, Poll: time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	res := s.Deliver(ctx, wire.NudgeRequest{ID: "n1", Mode: wire.NudgeWaitIdle}, "too late", nil)
	if res.Outcome != wire.NudgeBusy || res.Detail == "" {
		t.Fatalf("outcome %+v, want busy with why", res)
	}
	if text, _ := srv.History(context.Background(), "polecat", 10); strings.Contains(text, "too late") {
		t.Fatalf("typed after its deadline:\n%s", text)
	}
}
