package main

import (
	"testing"

	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// TestSyncCommands: against a running hostd with one polecat connected,
// sync status shows its data root and its rig's, sync log its (empty)
// transfers, and a transfer for a polecat that is away fails with hostd's
// reason (in JSON, the result carries it and the status is 0).
func TestSyncCommands(t *testing.T) {
	town, addr := startHostd(t)
	connect(t, town, addr, wire.Identity{Rig: "gastown", Name: "furiosa"})
	runs := []run{
		{[]string{"sync", "status"}, 0, "gastown/furiosa  0                       " + town + "/gastown/polecats/furiosa  " + town + "/gastown/polecats\n"},
		{[]string{"sync", "status"}, 0, "goes in from the rig's root, read-only: [.claude/settings.json .claude/commands .claude/hooks]"},
		{[]string{"sync", "status", "--json"}, 0, `"polecat":"gastown/furiosa"`},
		{[]string{"sync", "log"}, 0, "TIME  POLECAT  OP  FILES  APPLIED  MERGED  CONFLICTED  DELETED  RESULT\n"},
		{[]string{"sync", "log", "--json"}, 0, "null\n"},
		{[]string{"sync", "pull", "gastown/nux", "--dry-run", "--allow-deletes"}, 1, "hostd: gastown/nux is not connected\n"},
		{[]string{"sync", "push", "gastown/nux", "--json"}, 0, `"error":"gastown/nux is not connected"`}, // JSON carries the refusal
		{[]string{"sync", "push", "nux"}, 1, `hostd: identity "nux": want <rig>/<name>` + "\n"},
	}
	checkRuns(t, town, runs)
}
