package cli

import (
	"testing"

	"github.com/polecat-sidecar/sidecar/hostd/cli/clitest"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// TestStatusCommands: against a running hostd with one polecat
// connected and not yet beating, alive answers with its state and exit
// status 3, not known yet (and no error line), status counts it and shows it in the
// table, in JSON (filtered by --rig and --state, an unknown state
// refused) and in detail; forget refuses it, connected, and a polecat
// hostd does not know.
func TestStatusCommands(t *testing.T) {
	town, addr := clitest.StartHostd(t)
	clitest.Connect(t, town, addr, wire.Identity{Rig: "gastown", Name: "furiosa"})
	runs := []clitest.Want{
		{Args: []string{"alive", "gastown/furiosa"}, Code: exitNotKnown, Out: "gastown/furiosa: starting (connected, waiting for the first beat)\n"},
		{Args: []string{"alive", "gastown/nux"}, Code: 1, Out: "hostd: no polecat gastown/nux: it has never connected and this town's CA never issued it a certificate or join token"},
		{Args: []string{"status"}, Code: 0, Out: "1 polecat: 1 starting\nPOLECAT         STATE           FOR LINK   RTT  BEAT   CPU   RSS  IDLE COMMAND\ngastown/furiosa starting "},
		{Args: []string{"status", "--state", "dead,idle"}, Code: 0, Out: "1 polecat: 1 starting; listing 0 (dead, idle)\n"},
		{Args: []string{"status", "--state", "starting", "--state", "working"}, Code: 0, Out: "listing 1 (starting, working)\nPOLECAT "},
		{Args: []string{"status", "--json", "--state", "dead"}, Code: 0, Out: `"polecats": null`},
		{Args: []string{"status", "--state", "gone"}, Code: 1, Out: `hostd: --state "gone": a polecat is working, idle, starting, stale, disconnected, dead, revoked`},
		{Args: []string{"forget", "gastown/furiosa"}, Code: 1, Out: "gastown/furiosa is connected (its tunnel is up): hostd forgets only"},
		{Args: []string{"forget", "gastown/nux"}, Code: 1, Out: "hostd knows no polecat gastown/nux"},
		{Args: []string{"status", "--json", "--rig", "gastown"}, Code: 0, Out: `"identity": "gastown/furiosa"`},
		{Args: []string{"status", "--json", "--rig", "other"}, Code: 0, Out: `"polecats": null`},
		{Args: []string{"status", "gastown/furiosa"}, Code: 0, Out: "gastown/furiosa: starting for 0s: connected, waiting for the first beat\n  tunnel:    "},
	}
	if got, _ := hostd.Run(t, town, "", "alive", "gastown/furiosa"); got != runs[0].Out {
		t.Errorf("alive printed %q, want its state line alone", got)
	}
	hostd.Check(t, town, runs)
}
