package main

import (
	"testing"

	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// TestStatusCommands: against a running hostd with one polecat
// connected and not yet beating, alive answers with its state and exit
// status 1 (and no error line), status shows it in the table, in JSON
// (filtered by --rig) and in detail.
func TestStatusCommands(t *testing.T) {
	town, addr := startHostd(t)
	connect(t, town, addr, wire.Identity{Rig: "gastown", Name: "furiosa"})
	runs := []run{
		{[]string{"alive", "gastown/furiosa"}, 1, "gastown/furiosa: stale (tunnel up, waiting for the first beat)\n"},
		{[]string{"alive", "gastown/nux"}, 1, "hostd: no polecat gastown/nux: it has never connected and this town's CA never issued it a certificate or join token"},
		{[]string{"status"}, 0, "gastown/furiosa  stale "},
		{[]string{"status", "--json", "--rig", "gastown"}, 0, `"identity": "gastown/furiosa"`},
		{[]string{"status", "--json", "--rig", "other"}, 0, `"polecats": null`},
		{[]string{"status", "gastown/furiosa"}, 0, "gastown/furiosa: stale for 0s: tunnel up, waiting for the first beat\n  tunnel:    "},
	}
	if got, _ := runHostd(t, town, "", "alive", "gastown/furiosa"); got != runs[0].want {
		t.Errorf("alive printed %q, want its state line alone", got)
	}
	checkRuns(t, town, runs)
}
