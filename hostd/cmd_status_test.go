package main

import (
	"testing"

	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// TestStatusCommands: against a running hostd with one polecat
// connected and not yet beating, alive answers with its state and exit
// status 3, not known yet (and no error line), status counts it and shows it in the
// table, in JSON (filtered by --rig and --state, an unknown state
// refused) and in detail; forget refuses it, connected, and a polecat
// hostd does not know.
func TestStatusCommands(t *testing.T) {
	town, addr := startHostd(t)
	connect(t, town, addr, wire.Identity{Rig: "gastown", Name: "furiosa"})
	runs := []run{
		{[]string{"alive", "gastown/furiosa"}, exitNotKnown, "gastown/furiosa: starting (connected, waiting for the first beat)\n"},
		{[]string{"alive", "gastown/nux"}, 1, "hostd: no polecat gastown/nux: it has never connected and this town's CA never issued it a certificate or join token"},
		{[]string{"status"}, 0, "1 polecat: 1 starting\nPOLECAT         STATE           FOR LINK   RTT  BEAT   CPU   RSS  IDLE COMMAND\ngastown/furiosa starting "},
		{[]string{"status", "--state", "dead,idle"}, 0, "1 polecat: 1 starting; listing 0 (dead, idle)\n"},
		{[]string{"status", "--state", "starting", "--state", "working"}, 0, "listing 1 (starting, working)\nPOLECAT "},
		{[]string{"status", "--json", "--state", "dead"}, 0, `"polecats": null`},
		{[]string{"status", "--state", "gone"}, 1, `hostd: --state "gone": a polecat is working, idle, starting, stale, disconnected, dead, revoked`},
		{[]string{"forget", "gastown/furiosa"}, 1, "gastown/furiosa is connected (its tunnel is up): hostd forgets only"},
		{[]string{"forget", "gastown/nux"}, 1, "hostd knows no polecat gastown/nux"},
		{[]string{"status", "--json", "--rig", "gastown"}, 0, `"identity": "gastown/furiosa"`},
		{[]string{"status", "--json", "--rig", "other"}, 0, `"polecats": null`},
		{[]string{"status", "gastown/furiosa"}, 0, "gastown/furiosa: starting for 0s: connected, waiting for the first beat\n  tunnel:    "},
	}
	if got, _ := runHostd(t, town, "", "alive", "gastown/furiosa"); got != runs[0].want {
		t.Errorf("alive printed %q, want its state line alone", got)
	}
	checkRuns(t, town, runs)
}
