// Package sandbox is the container a polecat runs in when Gas Town starts
// it through 'hostd run' (its runtime.exec_wrapper). Gas Town's polecat
// has three layers: the session (Claude, which cycles often), the sandbox
// (which persists through every cycle) and the slot. The container is the
// sandbox: the first session of a polecat creates it, every later one
// starts in it, and it goes only when Gas Town nukes the polecat (the
// Reaper sees the polecat's directory gone, or 'hostd nuke').
//
// A Runtime owns the sandbox's life (CLI: docker or podman, driven by argv,
// never a shell): this package names the sandbox, creates, starts, lists
// and removes it. Everything after its agent is up goes over the
// polecat's own tunnel, the sandbox channel, whose host half (Streams)
// hostd serve runs for hostd run. It also keeps the starts hostd run could
// not make (Starts), for hostd status.
package sandbox

import (
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// Labels every sandbox carries: the town it belongs to (its root's
// absolute path) and the polecat.
const (
	TownLabel    = "polecat-sidecar.town"
	PolecatLabel = "polecat-sidecar.polecat"
)

// SessionName is the tmux session in the container that holds the
// polecat's sessions, the one its agent watches.
const SessionName = "polecat"

// Name is the container of polecat id: gt-<rig>-<name>, the name Gas Town
// gives the polecat's certificate and its Daytona workspace.
func Name(id wire.Identity) string { return "gt-" + id.Rig + "-" + id.Name }
