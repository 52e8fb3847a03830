package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// TestAliveJSON: alive --json prints one object with the polecat's state
// and keeps the exit status (1: connected but not beating yet); a name
// hostd never heard of is an error saying so.
func TestAliveJSON(t *testing.T) {
	town, addr := startHostd(t)
	furiosa := wire.Identity{Rig: "gastown", Name: "furiosa"}
	connect(t, town, addr, furiosa)
	got, code := runHostd(t, town, "", "alive", "gastown/furiosa", "--json")
	var a aliveness
	if err := json.Unmarshal([]byte(got), &a); code != 1 || err != nil || strings.Count(got, "\n") != 1 {
		t.Fatalf("alive --json: exit %d, %v: %q; want 1 and one JSON object", code, err, got)
	}
	if want := (aliveness{Identity: furiosa, Alive: false, State: "stale", Reason: "tunnel up, waiting for the first beat"}); a != want {
		t.Errorf("alive --json: %+v, want %+v", a, want)
	}
	if got, code := runHostd(t, town, "", "alive", "gastown/nobody", "--json"); code != 1 || !strings.HasPrefix(got, "hostd: no polecat gastown/nobody: it has never connected") {
		t.Errorf("alive --json of an unknown polecat: exit %d, %q", code, got)
	}
}
