// Package history is the record of a soak run: the driver in images/soak
// writes every operation's invocation and outcome, every fault,
// observation and resource sample as one JSON line (Writer), and
// afterwards Read loads the file, the checker (history/invariant) asserts
// the run's invariants over it (Jepsen-style: an operation whose outcome
// the driver never saw is indeterminate, which may or may not have taken
// effect, never a violation by itself), and WritePlot draws hostd's
// resources over the run.
//
// The history is self-contained: what the driver observed at the end
// (lines typed into panes, calls the stand-in gt recorded, commits found,
// final file contents) is in it as "observe" events, so the checker needs
// nothing but the events.
package history

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Event kinds. The operations (invoke, then ok or fail) are KindNudge,
// KindPush, KindRelay, KindData, KindPeek and KindFetch.
const (
	// KindNudge is a nudge sent to a polecat; its outcome event carries
	// hostd's final word on it.
	KindNudge = "nudge"
	// KindPush is a git push from a polecat (Branch, Commit).
	KindPush = "push"
	// KindRelay is a relayed gt/bd command; its Op is what the stand-in gt
	// records when it runs it.
	KindRelay = "relay"
	// KindData is a write into a polecat's data root on one Side.
	KindData = "data"
	// KindPeek is a pane peek.
	KindPeek = "peek"
	// KindFetch is a git fetch.
	KindFetch = "fetch"
	// KindTyped observes a nudge's text submitted in an agent's pane, once
	// per time it was seen.
	KindTyped = "typed"
	// KindRan observes the stand-in gt/bd running a relay op, once per run.
	KindRan = "ran"
	// KindLanded observes a commit found in a repository (Where).
	KindLanded = "landed"
	// KindFsck observes a git fsck of a repository (Where, OK, Err).
	KindFsck = "fsck"
	// KindFile observes a data file's content at the end (Hash, or "" for
	// absent); Of is set on a conflict copy.
	KindFile = "file"
	// KindStatus observes an agent's state as hostd status showed it.
	KindStatus = "status"
	// KindDisk observes disk use against its budget.
	KindDisk = "disk"
	// KindOriginReachable observes that origin is reachable: from then on
	// it must hold every pushed commit.
	KindOriginReachable = "origin-reachable"
	// KindFault is a fault injected (start) and lifted (end).
	KindFault = "fault"
	// KindSample is a sample of hostd's goroutines, FDs and RSS.
	KindSample = "sample"
	// KindRun marks the run's start (with its Seed) and end.
	KindRun = "run"
)

// Event phases.
const (
	// PhaseInvoke starts an operation.
	PhaseInvoke = "invoke"
	// PhaseOK ends an operation the client saw succeed.
	PhaseOK = "ok"
	// PhaseFail ends an operation the client saw fail (Err).
	PhaseFail = "fail"
	// PhaseOutcome is hostd's final word on an accepted nudge.
	PhaseOutcome = "outcome"
	// PhaseObserve is an observation, during the run or at its end.
	PhaseObserve = "observe"
	// PhaseStart starts a fault or the run.
	PhaseStart = "start"
	// PhaseEnd ends a fault or the run.
	PhaseEnd = "end"
	// PhaseBaseline is a resource sample before any load.
	PhaseBaseline = "baseline"
	// PhaseLoad is a resource sample under load.
	PhaseLoad = "load"
	// PhaseAfter is a resource sample once the load and faults are over.
	PhaseAfter = "after"
)

// Nudge outcomes (Event.Outcome of a nudge's outcome event).
const (
	// OutcomeDelivered says hostd typed the nudge.
	OutcomeDelivered = "delivered"
	// OutcomeExpired says the nudge's wait ran out before it was typed.
	OutcomeExpired = "expired"
	// OutcomeFailed says hostd gave up on the nudge.
	OutcomeFailed = "failed"
	// OutcomeCancelled says the nudge was cancelled before it was typed.
	OutcomeCancelled = "cancelled"
)

// Values of Event.Side and Event.Where.
const (
	// SideHost is the host's copy of a polecat's data.
	SideHost = "host"
	// SideContainer is the container's copy of a polecat's data.
	SideContainer = "container"
	// WhereRepo is hostd's .repo.git.
	WhereRepo = "repo"
	// WhereOrigin is the rig's origin.
	WhereOrigin = "origin"
)

// Fault kinds the driver injects (Event.Fault); Check accepts any string.
const (
	FaultHostdKill9          = "hostd-kill9"          // SIGKILL hostd, then restart it
	FaultAgentSigkill        = "agent-sigkill"        // SIGKILL an agent
	FaultAgentSigstop        = "agent-sigstop"        // SIGSTOP an agent, SIGCONT at the end
	FaultUDPBlock            = "udp-block"            // drop heartbeat UDP
	FaultTCPCut              = "tcp-cut"              // cut the tunnel's TCP connections
	FaultDiskFull            = "disk-full"            // fill the disk
	FaultContainerPause      = "container-pause"      // docker pause
	FaultContainerRestart    = "container-restart"    // docker restart
	FaultContainerDisconnect = "container-disconnect" // docker network disconnect
	FaultClockStep           = "clock-step"           // step the clock
)

// Event is one line of the history.
type Event struct {
	// T is when it happened; Writer.Add sets it when zero.
	T time.Time `json:"t"`
	// Kind is what happened: one of the Kind constants.
	Kind string `json:"kind"`
	// Phase is which part of it: one of the Phase constants.
	Phase string `json:"phase"`
	// Agent is the polecat's identity "rig/name"; "" for hostd-wide events.
	Agent string `json:"agent,omitempty"`
	// Op identifies an operation (its invoke and outcome share it), a
	// fault (start and end), or, on a ran observation, the relay op run.
	// A typed observation may carry the nudge op whose text was seen, so
	// that a nudge whose client saw no NudgeID (fail, indeterminate) can
	// still be matched: such a nudge may be typed at most once.
	Op string `json:"op,omitempty"`

	// NudgeID is hostd's id for an accepted nudge.
	NudgeID string `json:"nudge_id,omitempty"`
	// Mode is a nudge's mode: "wait-idle" or "immediate".
	Mode string `json:"mode,omitempty"`
	// Outcome is a nudge's outcome: one of the Outcome constants.
	Outcome string `json:"outcome,omitempty"`
	// Reason is why a nudge failed or expired; required for those.
	Reason string `json:"reason,omitempty"`
	// Branch is a push's or landed commit's branch.
	Branch string `json:"branch,omitempty"`
	// Commit is a push's or landed observation's commit.
	Commit string `json:"commit,omitempty"`
	// Where is which repository: WhereRepo or WhereOrigin.
	Where string `json:"where,omitempty"`
	// Side is which copy of the data: SideHost or SideContainer.
	Side string `json:"side,omitempty"`
	// Path is a data file's path relative to the polecat's data root.
	Path string `json:"path,omitempty"`
	// Hash is the hex sha256 of a data write or of a final file; "" for
	// a file observed absent.
	Hash string `json:"hash,omitempty"`
	// Of is, on a file observation of a conflict copy, the path it is a
	// copy of.
	Of string `json:"of,omitempty"`
	// Fault is a fault's kind: one of the Fault constants.
	Fault string `json:"fault,omitempty"`
	// Bound is, on a fault's start or end, within how long after its end
	// every affected agent must be back.
	Bound Duration `json:"bound,omitempty"`
	// Detect is, on a fault's start, within how long hostd status must
	// show its agent down (not back) while the fault lasts; 0 when the
	// fault implies no such state (a UDP block: the agent moves to TCP).
	Detect Duration `json:"detect,omitempty"`
	// Step is, on a clock-step fault's start, how far the agent's wall
	// clock was stepped (negative: behind hostd's).
	Step Duration `json:"step,omitempty"`
	// State is an agent's state as hostd status showed it; anything but
	// "disconnected" or "" counts as back.
	State string `json:"state,omitempty"`
	// Since is, on a status observation of a connected agent, when hostd
	// says its tunnel connected: the agent has been back since then, however
	// late the observation came.
	Since time.Time `json:"since,omitzero"`
	// Done is, on a fault's start, when its injection returned (T is when
	// it began: a tunnel that connected after T is a new one; detection
	// counts from Done). On a fault's end whose undoing the machine failed
	// (Err) and the harness completed another way, it is when that was
	// done: the fault held until then, so recovery is measured from Done,
	// while detection judges only up to T, when the undoing began.
	Done time.Time `json:"done,omitzero"`
	// Answered is, on a status observation, when hostd's answer came (T is
	// when it was asked for): the state shown held at some moment between
	// the two.
	Answered time.Time `json:"answered,omitzero"`
	// Goroutines is a sample's count of hostd's goroutines.
	Goroutines int `json:"goroutines,omitempty"`
	// FDs is a sample's count of hostd's open file descriptors.
	FDs int `json:"fds,omitempty"`
	// RSS is a sample's resident set size of hostd, in bytes.
	RSS int64 `json:"rss,omitempty"`
	// Bytes is a disk observation's bytes used.
	Bytes int64 `json:"bytes,omitempty"`
	// Budget is a disk observation's budget for Bytes.
	Budget int64 `json:"budget,omitempty"`
	// OK is an fsck observation's result.
	OK bool `json:"ok,omitempty"`
	// Err is the error a failed operation's client saw, or fsck's output.
	Err string `json:"err,omitempty"`
	// Seed is the run start's random seed.
	Seed int64 `json:"seed,omitempty"`
}

// String renders e on one line for people: its time, kind, phase and
// every field that is set, as key=value (quoted when needed).
func (e Event) String() string {
	var b strings.Builder
	b.WriteString(e.T.Format("15:04:05.000"))
	b.WriteString(" " + e.Kind + " " + e.Phase)
	kv := func(k, v string) {
		if v == "" {
			return
		}
		b.WriteString(" " + k + "=")
		if needsQuote(v) {
			b.WriteString(strconv.Quote(v))
		} else {
			b.WriteString(v)
		}
	}
	kv("agent", e.Agent)
	kv("op", e.Op)
	kv("nudge_id", e.NudgeID)
	kv("mode", e.Mode)
	kv("outcome", e.Outcome)
	kv("reason", e.Reason)
	kv("branch", e.Branch)
	kv("commit", e.Commit)
	kv("where", e.Where)
	kv("side", e.Side)
	kv("path", e.Path)
	kv("hash", e.Hash)
	kv("of", e.Of)
	kv("fault", e.Fault)
	if e.Bound != 0 {
		kv("bound", time.Duration(e.Bound).String())
	}
	if e.Detect != 0 {
		kv("detect", time.Duration(e.Detect).String())
	}
	kv("state", e.State)
	if !e.Done.IsZero() {
		kv("done", e.Done.Format("15:04:05.000"))
	}
	if !e.Since.IsZero() {
		kv("since", e.Since.Format("15:04:05.000"))
	}
	if e.Kind == KindSample {
		kv("goroutines", strconv.Itoa(e.Goroutines))
		kv("fds", strconv.Itoa(e.FDs))
		kv("rss", strconv.FormatInt(e.RSS, 10))
	}
	if e.Kind == KindDisk {
		kv("bytes", strconv.FormatInt(e.Bytes, 10))
		kv("budget", strconv.FormatInt(e.Budget, 10))
	}
	if e.Kind == KindFsck {
		kv("ok", strconv.FormatBool(e.OK))
	}
	kv("err", e.Err)
	if e.Seed != 0 {
		kv("seed", strconv.FormatInt(e.Seed, 10))
	}
	return b.String()
}

// needsQuote reports whether v must be quoted to stay one readable token.
func needsQuote(v string) bool {
	for _, r := range v {
		if r <= ' ' || r == '"' || r == '=' || r == 0x7f || !strconv.IsPrint(r) {
			return true
		}
	}
	return false
}

// Duration is a time.Duration that marshals as a Go duration string
// ("30s") and unmarshals from one, or from a number of nanoseconds.
type Duration time.Duration

// MarshalJSON encodes d as a quoted Go duration string.
func (d Duration) MarshalJSON() ([]byte, error) {
	return []byte(strconv.Quote(time.Duration(d).String())), nil
}

// UnmarshalJSON decodes a Go duration string or an integer of nanoseconds.
func (d *Duration) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return fmt.Errorf("decoding duration %s: %w", b, err)
		}
		v, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("decoding duration: %w", err)
		}
		*d = Duration(v)
		return nil
	}
	v, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		return fmt.Errorf("decoding duration %s: not a duration string or integer nanoseconds", b)
	}
	*d = Duration(v)
	return nil
}
