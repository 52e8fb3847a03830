package api

import "time"

// StartFailure is 'hostd run' failing to start a polecat's session in its
// sandbox: hostd status shows it until the polecat's next start succeeds.
type StartFailure struct {
	Identity Identity `json:"identity"`
	// At is when it failed.
	At time.Time `json:"at"`
	// Reason is what failed and what to do, as hostd run printed it on
	// Gas Town's pane. It may quote the container runtime and the
	// container (a clone's error): at most 1 KiB (wire.MaxReasonLen), and
	// escaped before any terminal.
	Reason string `json:"reason"`
}

// StartReport is PUT /v1/polecats/<rig>/<name>/start-failure's body:
// hostd run reporting why it could not start the polecat.
type StartReport struct {
	Reason string `json:"reason"`
}
