package heartbeat

import (
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// State is hostd's judgement of a polecat.
type State string

// The states, from what hostd sees (see Judge.evaluate for the rules).
const (
	// Working: beats arriving, session running, recent output.
	Working State = "working"
	// Idle: beats arriving, session running, no output for IdleAfter.
	Idle State = "idle"
	// Starting: the tunnel is up and the polecat is on its way: its agent
	// has (re)connected and not beaten yet, or it beats from a sandbox
	// whose first session has not started yet (for at most Grace from
	// the first such beat, by hostd's clock).
	Starting State = "starting"
	// Stale: the tunnel is up but no beat for StaleBeats intervals: the
	// agent is stuck or frozen.
	Stale State = "stale"
	// Disconnected: the tunnel is gone, for less than Grace.
	Disconnected State = "disconnected"
	// Dead: the session exited or cannot be found, or the tunnel has been
	// gone for longer than Grace.
	Dead State = "dead"
	// Revoked: the polecat's certificate was revoked.
	Revoked State = "revoked"
)

// States are every state, in the order hostd status counts them.
var States = []State{Working, Idle, Starting, Stale, Disconnected, Dead, Revoked}

// Alive reports whether a state counts as alive for scripts (hostd alive).
func (s State) Alive() bool { return s == Working || s == Idle }

// Thresholds tune the judgement. Zero fields take DefaultThresholds'.
type Thresholds struct {
	// Interval is how often agents beat.
	Interval time.Duration
	// StaleBeats is how many intervals without a beat, tunnel up, make a
	// polecat stale.
	StaleBeats int
	// IdleAfter is how long without output in the session's pane makes a
	// running polecat idle.
	IdleAfter time.Duration
	// Grace is how long a polecat may be disconnected before it is dead,
	// and how long a sandbox may beat without a first session.
	Grace time.Duration
}

// DefaultThresholds: beats every 5s, stale after 3 missed (15s), idle after
// 5 minutes without output, dead after 2 minutes disconnected.
func DefaultThresholds() Thresholds {
	return Thresholds{Interval: 5 * time.Second, StaleBeats: 3, IdleAfter: 5 * time.Minute, Grace: 2 * time.Minute}
}

func (t Thresholds) withDefaults() Thresholds {
	d := DefaultThresholds()
	if t.Interval <= 0 {
		t.Interval = d.Interval
	}
	if t.StaleBeats <= 0 {
		t.StaleBeats = d.StaleBeats
	}
	if t.IdleAfter <= 0 {
		t.IdleAfter = d.IdleAfter
	}
	if t.Grace <= 0 {
		t.Grace = d.Grace
	}
	return t
}

// Event is one state change.
type Event struct {
	Time   time.Time `json:"time"`
	From   State     `json:"from,omitempty"`
	To     State     `json:"to"`
	Reason string    `json:"reason"`
}

// maxEvents bounds the events kept per polecat.
const maxEvents = 50

// Record is what hostd knows of one polecat; it is what is kept on disk.
type Record struct {
	Identity       wire.Identity `json:"identity"`
	State          State         `json:"state"`
	Since          time.Time     `json:"since"`
	Reason         string        `json:"reason"`
	Connected      bool          `json:"connected"`
	ConnectedAt    time.Time     `json:"connected_at"`
	DisconnectedAt time.Time     `json:"disconnected_at"`
	DisconnectWhy  string        `json:"disconnect_reason,omitempty"`
	LastBeat       *Beat         `json:"last_beat,omitempty"`
	LastBeatAt     time.Time     `json:"last_beat_at"`
	Revoked        bool          `json:"revoked,omitempty"`
	// UpSince is when the tunnel last came up from down (for the first
	// time, after a disconnect or after hostd restarted): the beats before
	// it do not count for the tunnel since. A newer tunnel replacing one
	// still up (the agent's return to QUIC) leaves it as it was.
	UpSince time.Time `json:"up_since"`
	// NoSessionSince is when hostd received the first beat saying that no
	// session has run in the sandbox yet (never_started) since its last
	// beat from one that had: hostd's clock, not the agent's uptime (the
	// polecat says what it likes of that), kept across reconnects and
	// hostd restarts, so that such a sandbox is starting for at most
	// Grace from it however it comes and goes. Zero since a beat from a
	// sandbox that had a session.
	NoSessionSince time.Time `json:"no_session_since,omitzero"`
	// Restored marks a record loaded from disk whose agent has not come
	// back since hostd started: its state is the last known one.
	Restored bool    `json:"restored,omitempty"`
	Events   []Event `json:"events,omitempty"`
}

// Judge turns connections, beats and time into states. It is safe for
// concurrent use; its clock is injectable for tests.
type Judge struct {
	th Thresholds
	// Reasons that depend only on the thresholds, formatted once: the
	// judge evaluates every polecat every second.
	msgNoBeat, msgStale, msgIdle, msgGrace, msgRestart string
	msgNoSession                                       string
	now                                                func() time.Time
	started                                            time.Time
	onChange                                           func(Record, Event)

	mu   sync.Mutex
	recs map[wire.Identity]*Record
}

// NewJudge returns a judge using th and the clock now; onChange (may be
// nil) is called, without the judge's lock, after every state change.
func NewJudge(th Thresholds, now func() time.Time, onChange func(Record, Event)) *Judge {
	if now == nil {
		now = time.Now
	}
	th = th.withDefaults()
	staleAfter := time.Duration(th.StaleBeats) * th.Interval
	return &Judge{th: th, now: now, started: now(), onChange: onChange, recs: map[wire.Identity]*Record{},
		msgNoBeat:    fmt.Sprintf("tunnel up but no beat in %v", staleAfter),
		msgStale:     fmt.Sprintf("no beat for %v while the tunnel is up (agent stuck or frozen)", staleAfter),
		msgIdle:      fmt.Sprintf("no output for %v", th.IdleAfter),
		msgGrace:     fmt.Sprintf("tunnel gone for longer than %v", th.Grace),
		msgRestart:   fmt.Sprintf("not back within %v of hostd restarting", th.Grace),
		msgNoSession: fmt.Sprintf("no session has started in the %v since hostd first heard the sandbox had none", th.Grace),
	}
}

// Thresholds are the judge's thresholds, defaults filled in.
func (j *Judge) Thresholds() Thresholds { return j.th }

// Restore loads records kept from a previous run; each keeps its last
// known state, marked as such, until its agent is back or Grace passes.
func (j *Judge) Restore(recs []Record) {
	j.mu.Lock()
	defer j.mu.Unlock()
	for i := range recs {
		r := recs[i]
		r.Connected = false
		r.Restored = true
		j.recs[r.Identity] = &r
	}
}

// Connected records a new tunnel for id: one coming up, or one replacing
// the tunnel it has up.
func (j *Judge) Connected(id wire.Identity) {
	j.change(id, func(r *Record, now time.Time) {
		if !r.Connected {
			r.UpSince = now
		}
		r.Connected, r.ConnectedAt, r.Restored, r.Revoked = true, now, false, false
	})
}

// Disconnected records that id's tunnel is gone, and why.
func (j *Judge) Disconnected(id wire.Identity, why string) {
	j.change(id, func(r *Record, now time.Time) {
		r.Connected, r.DisconnectedAt, r.DisconnectWhy = false, now, why
	})
}

// Beat records a valid beat from id.
func (j *Judge) Beat(id wire.Identity, b *Beat) {
	j.change(id, func(r *Record, now time.Time) {
		r.LastBeat, r.LastBeatAt = b, now
		switch {
		case !b.noSessionYet():
			r.NoSessionSince = time.Time{}
		case r.NoSessionSince.IsZero():
			r.NoSessionSince = now
		}
	})
}

// Revoke records that id's certificates were revoked, all but those valid
// from validFrom on: the polecat is revoked unless it connected at or
// after validFrom (with a certificate issued since). A zero validFrom
// revokes it whatever it did. A polecat the judge has no record of (never
// connected, or forgotten: nuked) stays without one: hostd applies every
// revocation kept at each start, and a nuked polecat's must not bring it
// back.
func (j *Judge) Revoke(id wire.Identity, validFrom time.Time) {
	j.update(id, false, func(r *Record, now time.Time) {
		if validFrom.IsZero() || r.ConnectedAt.Before(validFrom) {
			r.Revoked = true
		}
	})
}

// Tick re-judges every polecat at the current time (time alone moves
// polecats to stale, idle and dead).
func (j *Judge) Tick() {
	j.mu.Lock()
	ids := make([]wire.Identity, 0, len(j.recs))
	for id := range j.recs {
		ids = append(ids, id)
	}
	j.mu.Unlock()
	for _, id := range ids {
		j.update(id, false, func(*Record, time.Time) {}) // one forgotten since stays so
	}
}

// change applies f to id's record, made if it has none, and re-judges it.
func (j *Judge) change(id wire.Identity, f func(*Record, time.Time)) { j.update(id, true, f) }

// update applies f to id's record and re-judges it; without a record, it
// makes one when create says so, else does nothing.
func (j *Judge) update(id wire.Identity, create bool, f func(*Record, time.Time)) {
	j.mu.Lock()
	now := j.now()
	r := j.recs[id]
	if r == nil && !create {
		j.mu.Unlock()
		return
	}
	if r == nil {
		r = &Record{Identity: id}
		j.recs[id] = r
	}
	f(r, now)
	state, reason := j.evaluate(r, now)
	if state == r.State {
		r.Reason = reason // the explanation stays current (an exit code learnt late)
		j.mu.Unlock()
		return
	}
	ev := Event{Time: now, From: r.State, To: state, Reason: reason}
	r.State, r.Since, r.Reason = state, now, reason
	r.Events = append(r.Events, ev)
	if len(r.Events) > maxEvents {
		r.Events = r.Events[len(r.Events)-maxEvents:]
	}
	snapshot := copyRecord(r)
	j.mu.Unlock()
	if j.onChange != nil {
		j.onChange(snapshot, ev)
	}
}

// evaluate is the state machine: the state a record is in at now.
func (j *Judge) evaluate(r *Record, now time.Time) (State, string) {
	staleAfter := time.Duration(j.th.StaleBeats) * j.th.Interval
	switch {
	case r.Revoked:
		return Revoked, "certificate revoked"
	case r.Restored:
		if now.Sub(j.started) >= j.th.Grace {
			return Dead, j.msgRestart
		}
		return r.State, r.Reason
	case !r.Connected:
		if now.Sub(r.DisconnectedAt) >= j.th.Grace {
			return Dead, j.msgGrace + " (" + r.DisconnectWhy + ")"
		}
		return Disconnected, "tunnel gone: " + r.DisconnectWhy
	case r.LastBeat == nil || r.LastBeatAt.Before(r.UpSince):
		switch {
		case now.Sub(r.UpSince) > staleAfter:
			return Stale, j.msgNoBeat
		case r.LastBeat == nil:
			return Starting, "connected, waiting for the first beat"
		}
		return Starting, "reconnected, waiting for the first beat"
	case now.Sub(r.LastBeatAt) > staleAfter:
		return Stale, j.msgStale
	}
	s := r.LastBeat.Session
	switch s.State {
	case SessionExited:
		if s.ExitCode != nil && s.ExitReason != "" {
			return Dead, fmt.Sprintf("session exited with code %d: %s", *s.ExitCode, s.ExitReason)
		}
		if s.ExitCode != nil {
			return Dead, fmt.Sprintf("session exited with code %d", *s.ExitCode)
		}
		return Dead, "session exited"
	case SessionNotFound:
		switch {
		case s.Name == "":
			return Dead, "the agent watches no session"
		case !s.NeverStarted:
			return Dead, "session not found"
		case now.Sub(r.NoSessionSince) >= j.th.Grace:
			return Dead, j.msgNoSession
		}
		return Starting, "no session yet: the sandbox's first session has not started"
	}
	if idle := r.LastBeat.idleAt(r.LastBeatAt, now); idle >= j.th.IdleAfter {
		return Idle, j.msgIdle
	}
	return Working, "beating, session running"
}

// ErrConnected is Forget's refusal of a polecat whose tunnel is up.
var ErrConnected = errors.New("its tunnel is up")

// Forget drops id's record, so that nothing shows it any more, unless its
// tunnel is up (ErrConnected): a connected polecat is judged whatever was
// forgotten. It reports whether there was a record.
func (j *Judge) Forget(id wire.Identity) (bool, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	r, ok := j.recs[id]
	switch {
	case !ok:
		return false, nil
	case r.Connected:
		return true, ErrConnected
	}
	delete(j.recs, id)
	return true, nil
}

// Get returns id's record.
func (j *Judge) Get(id wire.Identity) (Record, bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	r, ok := j.recs[id]
	if !ok {
		return Record{}, false
	}
	return copyRecord(r), true
}

// Snapshot returns every record, sorted by rig and name.
func (j *Judge) Snapshot() []Record {
	j.mu.Lock()
	out := make([]Record, 0, len(j.recs))
	for _, r := range j.recs {
		out = append(out, copyRecord(r))
	}
	j.mu.Unlock()
	sort.Slice(out, func(a, b int) bool {
		if out[a].Identity.Rig != out[b].Identity.Rig {
			return out[a].Identity.Rig < out[b].Identity.Rig
		}
		return out[a].Identity.Name < out[b].Identity.Name
	})
	return out
}

func copyRecord(r *Record) Record {
	c := *r
	c.Events = append([]Event(nil), r.Events...)
	return c
}
