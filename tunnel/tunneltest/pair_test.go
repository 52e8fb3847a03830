package tunneltest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// TestPair: the two ends of a Pair are one authenticated tunnel, and Fixed
// gives its session, or none until the context ends.
func TestPair(t *testing.T) {
	id := wire.Identity{Rig: "gastown", Name: "furiosa"}
	client, server := Pair(t, id)
	if server.Peer() != id {
		t.Errorf("server sees %v, want %v", server.Peer(), id)
	}
	if got, err := (Fixed{S: client}).Session(t.Context()); got != client || err != nil {
		t.Errorf("Fixed gives %p, %v; want the client", got, err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	if got, err := (Fixed{}).Session(ctx); got != nil || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Fixed with no session gives %v, %v; want the context's end", got, err)
	}
}
