package api

import (
	"slices"
	"time"
)

// Polecat is one polecat as hostd status shows it: its judged state, its
// tunnel (when connected) and its last beat.
type Polecat struct {
	Identity Identity `json:"identity"`
	Rig      string   `json:"rig"`
	Name     string   `json:"name"`
	// State is working, idle, stale, disconnected, dead or revoked, since
	// StateSince, for Reason. Restored means it is the last known state
	// from before hostd restarted, the agent not being back yet.
	State      string    `json:"state"`
	StateSince time.Time `json:"state_since"`
	Reason     string    `json:"reason"`
	Restored   bool      `json:"restored,omitempty"`
	// The tunnel, when connected.
	Connected   bool      `json:"connected"`
	Transport   string    `json:"transport,omitempty"`
	Remote      string    `json:"remote,omitempty"`
	Since       time.Time `json:"connected_since,omitempty"`
	RTTMillis   float64   `json:"rtt_ms"`
	Streams     int       `json:"streams"`
	CertSerial  string    `json:"cert_serial,omitempty"`
	CertExpires time.Time `json:"cert_expires,omitempty"`
	// From the last beat.
	LastBeat     time.Time `json:"last_beat,omitempty"`
	SessionState string    `json:"session_state,omitempty"`
	Command      string    `json:"command,omitempty"`
	Processes    int       `json:"processes"`
	CPUPercent   float64   `json:"cpu_percent"`
	RSSBytes     uint64    `json:"rss_bytes"`
	IdleSeconds  float64   `json:"idle_seconds"`
	// Nudges is how many nudges wait in its queue.
	Nudges int `json:"nudges"`
}

// InStates is the polecats of ps in one of states; all of them when
// states is empty.
func InStates(ps []Polecat, states []string) []Polecat {
	if len(states) == 0 {
		return ps
	}
	var out []Polecat
	for _, p := range ps {
		if slices.Contains(states, p.State) {
			out = append(out, p)
		}
	}
	return out
}

// Forgotten is what hostd forget (and hostd nuke, and hostd serve's reaper
// of a nuked polecat's sandbox) removed of a polecat. Its certificates
// and revocations, and the branches it landed that wait for origin, are
// never removed.
type Forgotten struct {
	// Polecat is whom.
	Polecat Identity `json:"polecat"`
	// Listed says whether hostd status listed it; Last is its last row
	// there when it did.
	Listed bool     `json:"listed"`
	Last   *Polecat `json:"last,omitempty"`
	// Nudges is how many nudges queued for it were cancelled.
	Nudges int `json:"nudges_cancelled"`
	// Removed are the files and directories of <town>/.runtime/hostd kept
	// for it alone that were removed: its data base and delete hold, its
	// relayed commands' temporary directory, the pane record of a hostd
	// run that has ended.
	Removed []string `json:"removed"`
}

// Nothing says whether hostd kept nothing of the polecat.
func (f Forgotten) Nothing() bool { return !f.Listed && f.Nudges == 0 && len(f.Removed) == 0 }

// PolecatDetail is one polecat with its last beat and recent state
// changes.
type PolecatDetail struct {
	Polecat
	Beat   *Beat   `json:"beat,omitempty"`
	Events []Event `json:"events"`
	// StartFailure is hostd run's last failure to start it, until a
	// start succeeds.
	StartFailure *StartFailure `json:"start_failure,omitempty"`
}

// UpstreamItem is a branch waiting to be pushed from a rig's .repo.git to
// its origin.
type UpstreamItem struct {
	Rig    string `json:"rig"`
	Branch string `json:"branch"`
	// Owner is the polecat it is queued for; the queue takes turns.
	Owner     string    `json:"owner,omitempty"`
	Since     time.Time `json:"since"`
	Attempts  int       `json:"attempts"`
	LastError string    `json:"last_error,omitempty"`
	NextTry   time.Time `json:"next_try"`
}

// Status is the daemon's state.
type Status struct {
	Version  string         `json:"version"`
	Listen   string         `json:"listen"`
	Started  time.Time      `json:"started"`
	Polecats []Polecat      `json:"polecats"`
	Upstream []UpstreamItem `json:"upstream"`
	// Listeners is each transport's accept loop: a stopped or failing one
	// refuses its tunnels while everything else looks fine.
	Listeners []ListenerHealth `json:"listeners"`
	// SyncConflicts counts the paths data merges left in conflict since
	// hostd started (hostd sync log has them).
	SyncConflicts int `json:"sync_conflicts"`
	// RelayConfinement is how the kernel confines relayed gt and bd
	// ("landlock (ABI 7)"), or why it cannot (RelayConfined false);
	// RelayRefused says hostd then refuses to relay
	// (relay.allow_unconfined is off).
	RelayConfinement string `json:"relay_confinement,omitempty"`
	RelayConfined    bool   `json:"relay_confined"`
	RelayRefused     bool   `json:"relay_refused"`
	// StartFailures are the polecats hostd run could not start, each
	// until its next start succeeds, by identity.
	StartFailures []StartFailure `json:"start_failures"`
}

// ListenerHealth is one transport's accept loop as status shows it
// (tunnel.ListenerHealth, which hostd/control converts it from): a loop
// that stopped, or keeps failing to accept, refuses every tunnel of its
// transport while everything else looks fine.
type ListenerHealth struct {
	// Transport is quic or tcp; Up is false once the loop has stopped.
	Transport string `json:"transport"`
	Up        bool   `json:"up"`
	// AcceptErrors counts failed accepts; LastError is the latest, and
	// when it happened.
	AcceptErrors uint64    `json:"accept_errors"`
	LastError    string    `json:"last_error,omitempty"`
	LastErrorAt  time.Time `json:"last_error_at,omitzero"`
	// Handshakes are in progress (TCP); Shed counts connections closed
	// unanswered because too many were.
	Handshakes int    `json:"handshakes"`
	Shed       uint64 `json:"shed"`
}
