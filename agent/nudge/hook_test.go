package nudge

import (
	"context"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestHooks: events arrive over the socket in order; unknown events, long
// lines and silent connections are refused without changing what is known.
func TestHooks(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "hooks.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	h := &Hooks{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go h.Serve(ctx, ln)

	if h.Known() {
		t.Fatal("known before any hook")
	}
	for _, ev := range []string{HookUserPromptSubmit, HookPreToolUse, HookStop} {
		if err := SendHook(sock, ev); err != nil {
			t.Fatalf("%s: %v", ev, err)
		}
	}
	if last, ok := h.Last(); !ok || last != HookStop || h.Submits() != 1 {
		t.Fatalf("after three events: %q %v, %d submits", last, ok, h.Submits())
	}
	for _, bad := range []string{"Bogus", "Stop; rm -rf /", strings.Repeat("S", 200)} {
		if err := SendHook(sock, bad); err == nil {
			t.Errorf("%.20q was taken", bad)
		}
	}
	// A connection that never says anything is dropped.
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(3 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil || strings.Contains(err.Error(), "timeout") {
		t.Errorf("a silent connection was kept: %v", err)
	}
	c.Close()
	if last, _ := h.Last(); last != HookStop {
		t.Errorf("refused input changed the state to %q", last)
	}
	var nilHooks *Hooks
	if nilHooks.Known() || nilHooks.Submits() != 0 {
		t.Error("a nil Hooks knows something")
	}
}
