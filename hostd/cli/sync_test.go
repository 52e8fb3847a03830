package cli

import (
	"testing"

	"github.com/polecat-sidecar/sidecar/hostd/cli/clitest"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// TestSyncCommands: against a running hostd with one polecat connected,
// sync status shows its data root and its rig's, sync log its (empty)
// transfers, and a transfer for a polecat that is away fails with hostd's
// reason (in JSON, the result carries it and the status is 0).
func TestSyncCommands(t *testing.T) {
	town, addr := clitest.StartHostd(t)
	clitest.Connect(t, town, addr, wire.Identity{Rig: "gastown", Name: "furiosa"})
	runs := []clitest.Want{
		{Args: []string{"sync", "status"}, Code: 0, Out: "gastown/furiosa  0                       " + town + "/gastown/polecats/furiosa  " + town + "/gastown/polecats\n"},
		{Args: []string{"sync", "status"}, Code: 0, Out: "goes in from the rig's root, read-only: [.claude/settings.json .claude/commands .claude/hooks]"},
		{Args: []string{"sync", "status", "--json"}, Code: 0, Out: `"polecat":"gastown/furiosa"`},
		{Args: []string{"sync", "log"}, Code: 0, Out: "TIME  POLECAT  OP  FILES  APPLIED  MERGED  CONFLICTED  DELETED  RESULT\n"},
		{Args: []string{"sync", "log", "--json"}, Code: 0, Out: "null\n"},
		{Args: []string{"sync", "pull", "gastown/nux", "--dry-run", "--allow-deletes"}, Code: 1, Out: "hostd: gastown/nux is not connected\n"},
		{Args: []string{"sync", "push", "gastown/nux", "--json"}, Code: 0, Out: `"error":"gastown/nux is not connected"`}, // JSON carries the refusal
		{Args: []string{"sync", "push", "nux"}, Code: 1, Out: `hostd: identity "nux": want <rig>/<name>` + "\n"},
	}
	hostd.Check(t, town, runs)
}
