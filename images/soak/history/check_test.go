package history

import (
	"slices"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// at is t0 plus s seconds.
func at(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }

const mib = 1 << 20

// cleanHistory is a small run that keeps every invariant.
func cleanHistory() []Event {
	bound := func(s int) Duration { return Duration(time.Duration(s) * time.Second) }
	return []Event{
		{T: at(0), Kind: KindRun, Phase: PhaseStart, Seed: 42},
		{T: at(1), Kind: KindStatus, Phase: PhaseObserve, Agent: "rig/a", State: "connected"},
		{T: at(1), Kind: KindStatus, Phase: PhaseObserve, Agent: "rig/b", State: "idle"},
		{T: at(2), Kind: KindSample, Phase: PhaseBaseline, Goroutines: 100, FDs: 50, RSS: 100 * mib},
		{T: at(3), Kind: KindSample, Phase: PhaseBaseline, Goroutines: 102, FDs: 51, RSS: 101 * mib},
		{T: at(4), Kind: KindSample, Phase: PhaseBaseline, Goroutines: 98, FDs: 49, RSS: 99 * mib},

		{T: at(10), Kind: KindNudge, Phase: PhaseInvoke, Agent: "rig/a", Op: "n1", Mode: "immediate"},
		{T: at(11), Kind: KindNudge, Phase: PhaseOK, Agent: "rig/a", Op: "n1", NudgeID: "h-1"},
		{T: at(12), Kind: KindNudge, Phase: PhaseInvoke, Agent: "rig/b", Op: "n2", Mode: "wait-idle"},
		{T: at(13), Kind: KindNudge, Phase: PhaseOK, Agent: "rig/b", Op: "n2", NudgeID: "h-2"},
		{T: at(14), Kind: KindNudge, Phase: PhaseInvoke, Agent: "rig/a", Op: "n3", Mode: "immediate"},
		{T: at(15), Kind: KindNudge, Phase: PhaseFail, Agent: "rig/a", Op: "n3", Err: "refused: queue full"},
		{T: at(20), Kind: KindPush, Phase: PhaseInvoke, Agent: "rig/a", Op: "p1", Branch: "polecat/a", Commit: "c1"},
		{T: at(21), Kind: KindPush, Phase: PhaseOK, Agent: "rig/a", Op: "p1"},
		{T: at(22), Kind: KindRelay, Phase: PhaseInvoke, Agent: "rig/a", Op: "r1"},
		{T: at(23), Kind: KindRelay, Phase: PhaseOK, Agent: "rig/a", Op: "r1"},
		{T: at(24), Kind: KindRelay, Phase: PhaseInvoke, Agent: "rig/b", Op: "r2"},
		{T: at(25), Kind: KindRelay, Phase: PhaseFail, Agent: "rig/b", Op: "r2", Err: "tunnel closed"},
		{T: at(26), Kind: KindRelay, Phase: PhaseInvoke, Agent: "rig/b", Op: "r3"},
		{T: at(27), Kind: KindPeek, Phase: PhaseInvoke, Agent: "rig/b", Op: "k1"},
		{T: at(28), Kind: KindPeek, Phase: PhaseOK, Agent: "rig/b", Op: "k1"},
		{T: at(30), Kind: KindData, Phase: PhaseInvoke, Agent: "rig/a", Op: "d1", Side: SideHost, Path: "notes.txt", Hash: "aaaa1"},
		{T: at(31), Kind: KindData, Phase: PhaseOK, Agent: "rig/a", Op: "d1"},
		{T: at(32), Kind: KindData, Phase: PhaseInvoke, Agent: "rig/a", Op: "d2", Side: SideContainer, Path: "notes.txt", Hash: "bbbb2"},
		{T: at(33), Kind: KindData, Phase: PhaseOK, Agent: "rig/a", Op: "d2"},
		{T: at(40), Kind: KindNudge, Phase: PhaseOutcome, Agent: "rig/b", NudgeID: "h-2", Outcome: OutcomeExpired, Reason: "agent busy for 30s"},

		{T: at(50), Kind: KindFault, Phase: PhaseStart, Agent: "rig/a", Op: "f1", Fault: FaultAgentSigkill, Detect: bound(4)},
		{T: at(52), Kind: KindStatus, Phase: PhaseObserve, Agent: "rig/a", State: "disconnected"},
		{T: at(54.5), Kind: KindStatus, Phase: PhaseObserve, Agent: "rig/a", State: "disconnected"},
		{T: at(55), Kind: KindFault, Phase: PhaseEnd, Agent: "rig/a", Op: "f1", Fault: FaultAgentSigkill, Bound: bound(30)},
		{T: at(60), Kind: KindStatus, Phase: PhaseObserve, Agent: "rig/a", State: "connected"},
		{T: at(70), Kind: KindFault, Phase: PhaseStart, Op: "f2", Fault: FaultHostdKill9, Bound: bound(20)},
		{T: at(72), Kind: KindStatus, Phase: PhaseObserve, Agent: "rig/a", State: "disconnected"},
		{T: at(72), Kind: KindStatus, Phase: PhaseObserve, Agent: "rig/b", State: "disconnected"},
		{T: at(75), Kind: KindFault, Phase: PhaseEnd, Op: "f2", Fault: FaultHostdKill9},
		{T: at(80), Kind: KindStatus, Phase: PhaseObserve, Agent: "rig/a", State: "connected"},
		{T: at(85), Kind: KindStatus, Phase: PhaseObserve, Agent: "rig/b", State: "working"},
		{T: at(90), Kind: KindSample, Phase: PhaseLoad, Goroutines: 300, FDs: 120, RSS: 200 * mib},
		{T: at(190), Kind: KindSample, Phase: PhaseAfter, Goroutines: 110, FDs: 55, RSS: 120 * mib},
		{T: at(191), Kind: KindDisk, Phase: PhaseObserve, Bytes: 100, Budget: 1000},

		{T: at(200), Kind: KindTyped, Phase: PhaseObserve, Agent: "rig/a", NudgeID: "h-1"},
		{T: at(201), Kind: KindRan, Phase: PhaseObserve, Op: "r1"},
		{T: at(202), Kind: KindLanded, Phase: PhaseObserve, Commit: "c1", Branch: "polecat/a", Where: WhereRepo},
		{T: at(203), Kind: KindOriginReachable, Phase: PhaseObserve},
		{T: at(204), Kind: KindLanded, Phase: PhaseObserve, Commit: "c1", Branch: "polecat/a", Where: WhereOrigin},
		{T: at(205), Kind: KindFsck, Phase: PhaseObserve, Where: WhereRepo, OK: true},
		{T: at(206), Kind: KindFsck, Phase: PhaseObserve, Where: WhereOrigin, OK: true},
		{T: at(207), Kind: KindFile, Phase: PhaseObserve, Agent: "rig/a", Side: SideHost, Path: "notes.txt", Hash: "bbbb2"},
		{T: at(208), Kind: KindFile, Phase: PhaseObserve, Agent: "rig/a", Side: SideContainer, Path: "notes.txt", Hash: "bbbb2"},
		{T: at(209), Kind: KindFile, Phase: PhaseObserve, Agent: "rig/a", Side: SideHost, Path: "notes.txt.conflict-host", Of: "notes.txt", Hash: "aaaa1"},
		{T: at(210), Kind: KindRun, Phase: PhaseEnd},
	}
}

// without drops the events matching drop.
func without(drop func(Event) bool) func([]Event) []Event {
	return func(evs []Event) []Event { return slices.DeleteFunc(evs, drop) }
}

// with appends more.
func with(more ...Event) func([]Event) []Event {
	return func(evs []Event) []Event { return append(evs, more...) }
}

// edit changes the events matching match.
func edit(match func(Event) bool, change func(*Event)) func([]Event) []Event {
	return func(evs []Event) []Event {
		for i := range evs {
			if match(evs[i]) {
				change(&evs[i])
			}
		}
		return evs
	}
}

// is matches events of kind and phase whose op is op ("" for any).
func is(kind, phase, op string) func(Event) bool {
	return func(e Event) bool { return e.Kind == kind && e.Phase == phase && (op == "" || e.Op == op) }
}

// backAfterF1 gives fault f1 (which ends at 55 s) a bound of 3 s and has
// rig/a's first observation back after it (at 60 s) made at sec instead,
// saying its tunnel connected at since.
func backAfterF1(sec float64, since time.Time) func([]Event) []Event {
	return then(
		edit(is(KindFault, PhaseEnd, "f1"), func(e *Event) { e.Bound = Duration(3 * time.Second) }),
		edit(func(e Event) bool { return e.Kind == KindStatus && e.Agent == "rig/a" && e.T.Equal(at(60)) },
			func(e *Event) { e.T, e.Since = at(sec), since }))
}

// then applies changes in order.
func then(changes ...func([]Event) []Event) func([]Event) []Event {
	return func(evs []Event) []Event {
		for _, c := range changes {
			evs = c(evs)
		}
		return evs
	}
}

func TestCheck(t *testing.T) {
	tests := []struct {
		name   string
		change func([]Event) []Event // of the clean history; nil for none
		fail   []string              // the invariants that must fail
		msg    string                // in a violation of each
		env    int                   // the environment failures the report lists
	}{
		{name: "clean"},

		// nudge exactly once
		{name: "nudge typed twice",
			change: with(Event{T: at(200.5), Kind: KindTyped, Phase: PhaseObserve, Agent: "rig/a", NudgeID: "h-1"}),
			fail:   []string{InvNudge}, msg: "nudge op n1 (h-1) typed 2 times"},
		{name: "nudge accepted, never typed, no outcome",
			change: without(is(KindTyped, PhaseObserve, "")),
			fail:   []string{InvNudge}, msg: "nudge op n1 (h-1) silently lost"},
		{name: "nudge expired without reason",
			change: edit(is(KindNudge, PhaseOutcome, ""), func(e *Event) { e.Reason = "" }),
			fail:   []string{InvNudge}, msg: "nudge op n2 (h-2) expired without a reason"},
		{name: "nudge delivered but never typed",
			change: edit(is(KindNudge, PhaseOutcome, ""), func(e *Event) { e.Outcome = OutcomeDelivered }),
			fail:   []string{InvNudge}, msg: "nudge op n2 (h-2) reported delivered"},
		{name: "nudge typed into the wrong pane",
			change: edit(is(KindTyped, PhaseObserve, ""), func(e *Event) { e.Agent = "rig/b" }),
			fail:   []string{InvNudge}, msg: "h-1"},
		{name: "nudge typed that was never accepted",
			change: with(Event{T: at(200.5), Kind: KindTyped, Phase: PhaseObserve, Agent: "rig/b", NudgeID: "h-99"}),
			fail:   []string{InvNudge}, msg: `nudge "h-99" typed into rig/b's pane but never accepted`},
		{name: "failed nudge typed once, matched by op",
			change: with(Event{T: at(200.5), Kind: KindTyped, Phase: PhaseObserve, Agent: "rig/a", Op: "n3", NudgeID: "h-3"})},
		{name: "failed nudge typed twice",
			change: with(
				Event{T: at(200.5), Kind: KindTyped, Phase: PhaseObserve, Agent: "rig/a", Op: "n3"},
				Event{T: at(200.6), Kind: KindTyped, Phase: PhaseObserve, Agent: "rig/a", Op: "n3"}),
			fail: []string{InvNudge}, msg: "nudge op n3"},

		// push durable
		{name: "push ok but not landed",
			change: without(func(e Event) bool { return e.Kind == KindLanded && e.Where == WhereRepo }),
			fail:   []string{InvPush}, msg: "push op p1 acknowledged but commit c1 not in hostd's repository"},
		{name: "push in repo but not origin after origin-reachable",
			change: without(func(e Event) bool { return e.Kind == KindLanded && e.Where == WhereOrigin }),
			fail:   []string{InvPush}, msg: "push op p1 acknowledged but commit c1 not in origin"},
		{name: "push not in origin, origin never reachable",
			change: without(func(e Event) bool {
				return e.Kind == KindOriginReachable || (e.Kind == KindLanded && e.Where == WhereOrigin)
			})},
		{name: "failed push not landed",
			change: then(
				edit(is(KindPush, PhaseOK, "p1"), func(e *Event) { e.Phase = PhaseFail; e.Err = "remote hung up" }),
				without(is(KindLanded, PhaseObserve, "")),
				without(is(KindOriginReachable, PhaseObserve, "")))},
		{name: "fsck not ok",
			change: edit(func(e Event) bool { return e.Kind == KindFsck && e.Where == WhereOrigin },
				func(e *Event) { e.OK = false; e.Err = "error: missing blob" }),
			fail: []string{InvPush}, msg: "git fsck of origin failed"},

		// data not lost
		{name: "host write overwritten by the container's, no conflict copy",
			change: without(func(e Event) bool { return e.Kind == KindFile && e.Of != "" }),
			fail:   []string{InvData}, msg: "data op d1: rig/a's host write of notes.txt"},
		{name: "conflict copy on the container side",
			change: edit(func(e Event) bool { return e.Kind == KindFile && e.Of != "" }, func(e *Event) { e.Side = SideContainer })},
		{name: "an earlier write's line lost",
			change: with(
				Event{T: at(29), Kind: KindData, Phase: PhaseInvoke, Agent: "rig/a", Op: "d0", Side: SideHost, Path: "notes.txt", Hash: "0000"},
				Event{T: at(29.5), Kind: KindData, Phase: PhaseOK, Agent: "rig/a", Op: "d0"}),
			fail: []string{InvData}, msg: "data op d0"},
		{name: "an earlier write's line kept beside a later one",
			change: with(
				Event{T: at(29), Kind: KindData, Phase: PhaseInvoke, Agent: "rig/a", Op: "d0", Side: SideHost, Path: "notes.txt", Hash: "0000"},
				Event{T: at(29.5), Kind: KindData, Phase: PhaseOK, Agent: "rig/a", Op: "d0"},
				Event{T: at(210), Kind: KindFile, Phase: PhaseObserve, Agent: "rig/a", Side: SideContainer, Path: "notes.txt", Hash: "0000"})},
		{name: "a write that failed wrote nothing to keep",
			change: then(
				edit(is(KindData, PhaseOK, "d1"), func(e *Event) { e.Phase = PhaseFail; e.Err = "no space left on device" }),
				without(func(e Event) bool { return e.Kind == KindFile && e.Of != "" }))},
		{name: "a write with no outcome may have written: checked",
			change: then(
				without(is(KindData, PhaseOK, "d1")),
				without(func(e Event) bool { return e.Kind == KindFile && e.Of != "" })),
			fail: []string{InvData}, msg: "data op d1"},
		{name: "file observed absent",
			change: edit(is(KindFile, PhaseObserve, ""), func(e *Event) { e.Hash = "" }),
			fail:   []string{InvData}, msg: "data op d2"},
		{name: "no final observation",
			change: without(is(KindFile, PhaseObserve, "")),
			fail:   []string{InvData}, msg: "agent rig/a: no final observation"},

		// relay exactly once
		{name: "relay ok, never ran",
			change: without(is(KindRan, PhaseObserve, "r1")),
			fail:   []string{InvRelay}, msg: "relay op r1 succeeded but ran 0 times"},
		{name: "relay ran twice",
			change: with(Event{T: at(201.5), Kind: KindRan, Phase: PhaseObserve, Op: "r1"}),
			fail:   []string{InvRelay}, msg: "relay op r1 succeeded but ran 2 times"},
		{name: "relay failed but ran once",
			change: with(Event{T: at(201.5), Kind: KindRan, Phase: PhaseObserve, Op: "r2"})},
		{name: "relay indeterminate ran twice",
			change: with(
				Event{T: at(201.5), Kind: KindRan, Phase: PhaseObserve, Op: "r3"},
				Event{T: at(201.6), Kind: KindRan, Phase: PhaseObserve, Op: "r3"}),
			fail: []string{InvRelay}, msg: "relay op r3 (indeterminate) ran 2 times"},
		{name: "relay ran but never invoked",
			change: with(Event{T: at(201.5), Kind: KindRan, Phase: PhaseObserve, Op: "r9"}),
			fail:   []string{InvRelay}, msg: `relay op "r9" ran but was never invoked`},

		// recovery within bound
		// down shown within bound
		{name: "status still up after the detect bound",
			change: edit(func(e Event) bool { return e.Kind == KindStatus && e.T.Equal(at(54.5)) }, func(e *Event) { e.State = "working" }),
			fail:   []string{InvDetect}, msg: "fault f1 (agent-sigkill): hostd status showed rig/a up (working) 4.5s after"},
		{name: "up, asked for before the fault's end and answered after it: not judged",
			change: edit(func(e Event) bool { return e.Kind == KindStatus && e.T.Equal(at(54.5)) }, func(e *Event) { e.State, e.Answered = "working", at(55.5) })},
		{name: "up, answered before the fault's end",
			change: edit(func(e Event) bool { return e.Kind == KindStatus && e.T.Equal(at(54.5)) }, func(e *Event) { e.State, e.Answered = "working", at(54.9) }),
			fail:   []string{InvDetect}, msg: "fault f1 (agent-sigkill): hostd status showed rig/a up (working) 4.5s after"},
		{name: "up before the detect bound",
			change: edit(func(e Event) bool { return e.Kind == KindStatus && e.T.Equal(at(52)) }, func(e *Event) { e.State = "working" })},
		{name: "no observation between the detect bound and the end: not judged",
			change: then(
				without(func(e Event) bool { return e.Kind == KindStatus && e.T.Equal(at(54.5)) }),
				edit(func(e Event) bool { return e.Kind == KindStatus && e.T.Equal(at(52)) }, func(e *Event) { e.State = "working" }))},
		{name: "a fault shorter than its detect bound is not judged",
			change: then(
				edit(is(KindFault, PhaseStart, "f1"), func(e *Event) { e.Detect = Duration(10 * time.Second) }),
				edit(func(e Event) bool { return e.Kind == KindStatus && e.T.Equal(at(54.5)) }, func(e *Event) { e.State = "working" }))},

		{name: "recovery beyond bound",
			change: edit(is(KindFault, PhaseEnd, "f1"), func(e *Event) { e.Bound = Duration(3 * time.Second) }),
			fail:   []string{InvRecovery}, msg: "fault f1 (agent-sigkill): rig/a back after 5s, bound 3s"},
		{name: "a late observation of a tunnel that connected in time",
			change: backAfterF1(60, at(57))},
		{name: "a tunnel that connected late, observed at once",
			change: backAfterF1(58.5, at(58.5)),
			fail:   []string{InvRecovery}, msg: "fault f1 (agent-sigkill): rig/a back after 3.5s, bound 3s"},
		{name: "a tunnel that outlived a fault that leaves tunnels be is back when it ends",
			change: then(backAfterF1(60, at(40)),
				edit(func(e Event) bool { return e.Op == "f1" }, func(e *Event) { e.Fault = FaultAgentSigstop }))},
		{name: "a tunnel from before a kill is a dead one hostd has not noticed, not back",
			change: then(backAfterF1(60, at(40)), without(func(e Event) bool { return e.Op == "f2" })),
			fail:   []string{InvRecovery}, msg: "fault f1 (agent-sigkill): rig/a back after 25s, bound 3s"},
		{name: "a fault that begins before the agent is seen back restarts the clock",
			change: then(
				edit(is(KindFault, PhaseEnd, "f1"), func(e *Event) { e.Bound = Duration(3 * time.Second) }),
				with(Event{T: at(57), Kind: KindFault, Phase: PhaseStart, Op: "f4", Fault: FaultHostdKill9},
					Event{T: at(59), Kind: KindFault, Phase: PhaseEnd, Op: "f4", Fault: FaultHostdKill9, Bound: Duration(3 * time.Second)}))},
		{name: "never back",
			change: then(
				without(func(e Event) bool { return e.Kind == KindStatus && e.Agent == "rig/a" && e.T.After(at(55)) }),
				with(Event{T: at(150), Kind: KindStatus, Phase: PhaseObserve, Agent: "rig/b", State: "idle"})),
			fail: []string{InvRecovery}, msg: "rig/a not back within"},
		{name: "a fault the machine could not undo is not judged, and is listed",
			change: then(
				without(func(e Event) bool { return e.Kind == KindStatus && e.Agent == "rig/a" && e.T.After(at(55)) }),
				with(Event{T: at(150), Kind: KindStatus, Phase: PhaseObserve, Agent: "rig/b", State: "idle"}),
				edit(is(KindFault, PhaseEnd, "f1"), func(e *Event) { e.Phase, e.Err = PhaseFail, "docker unpause: hung" })),
			env: 1},
		{name: "a fault undone another way is judged, and listed",
			change: then(
				without(func(e Event) bool { return e.Kind == KindStatus && e.Agent == "rig/a" && e.T.After(at(55)) }),
				with(Event{T: at(150), Kind: KindStatus, Phase: PhaseObserve, Agent: "rig/b", State: "idle"}),
				edit(is(KindFault, PhaseEnd, "f1"), func(e *Event) { e.Err = "docker unpause: hung; thawed through the freezer" })),
			fail: []string{InvRecovery}, msg: "rig/a not back within", env: 1},
		{name: "a fault not undone, begun after the bound, hides no miss before it",
			change: then(
				without(func(e Event) bool { return e.Kind == KindStatus && e.Agent == "rig/a" && e.T.After(at(55)) }),
				with(Event{T: at(150), Kind: KindStatus, Phase: PhaseObserve, Agent: "rig/b", State: "idle"},
					Event{T: at(107), Kind: KindStatus, Phase: PhaseObserve, Agent: "rig/a", State: "disconnected"},
					Event{T: at(110), Kind: KindFault, Phase: PhaseStart, Agent: "rig/a", Op: "f5", Fault: FaultContainerPause},
					Event{T: at(120), Kind: KindFault, Phase: PhaseFail, Agent: "rig/a", Op: "f5", Fault: FaultContainerPause, Err: "docker unpause: hung"})),
			fail: []string{InvRecovery}, msg: "rig/a not back within", env: 1},
		{name: "a fault begun after the bound, the agent seen down at it, does not restart the clock",
			change: then(
				edit(is(KindFault, PhaseEnd, "f1"), func(e *Event) { e.Bound = Duration(3 * time.Second) }),
				with(Event{T: at(58.2), Kind: KindStatus, Phase: PhaseObserve, Agent: "rig/a", State: "disconnected"},
					Event{T: at(58.5), Kind: KindFault, Phase: PhaseStart, Agent: "rig/a", Op: "f5", Fault: FaultAgentSigstop, Bound: Duration(30 * time.Second)},
					Event{T: at(59), Kind: KindFault, Phase: PhaseEnd, Agent: "rig/a", Op: "f5", Fault: FaultAgentSigstop, Bound: Duration(30 * time.Second)})),
			fail: []string{InvRecovery}, msg: "fault f1 (agent-sigkill): rig/a back after 5s, bound 3s"},
		{name: "an undoing the harness finished another way: recovery counts from when it was done",
			change: then(
				edit(is(KindFault, PhaseEnd, "f1"), func(e *Event) {
					e.Bound, e.Err, e.Done = Duration(3*time.Second), "docker unpause: hung; thawed through the freezer", at(58)
				})),
			env: 1},
		{name: "the same without Done: back too late",
			change: then(
				edit(is(KindFault, PhaseEnd, "f1"), func(e *Event) { e.Bound = Duration(3 * time.Second) }),
				without(func(e Event) bool { return e.Kind == KindStatus && e.Agent == "rig/a" && e.T.Equal(at(60)) }),
				with(Event{T: at(60), Kind: KindStatus, Phase: PhaseObserve, Agent: "rig/a", State: "connected", Since: at(59.5)})),
			fail: []string{InvRecovery}, msg: "rig/a back after 4.5s, bound 3s"},
		{name: "a tunnel that connected while the kill was being injected is a new one",
			change: then(backAfterF1(60, at(51)),
				edit(is(KindFault, PhaseStart, "f1"), func(e *Event) { e.Done = at(52) }))},
		{name: "the same kill stamped when its injection returned: that tunnel is taken for a dead one",
			change: then(backAfterF1(60, at(51)),
				edit(is(KindFault, PhaseStart, "f1"), func(e *Event) { e.T = at(52) })),
			fail: []string{InvRecovery}, msg: "fault f1 (agent-sigkill): rig/a back after 25s, bound 3s"},
		{name: "detection counts from when the injection returned",
			change: then(
				edit(is(KindFault, PhaseStart, "f1"), func(e *Event) { e.Done = at(51.5) }),
				with(Event{T: at(55), Answered: at(55), Kind: KindStatus, Phase: PhaseObserve, Agent: "rig/a", State: "working"}),
				edit(is(KindFault, PhaseEnd, "f1"), func(e *Event) { e.T = at(56) }))},
		{name: "the same counted from when the injection began",
			change: then(
				with(Event{T: at(55), Answered: at(55), Kind: KindStatus, Phase: PhaseObserve, Agent: "rig/a", State: "working"}),
				edit(is(KindFault, PhaseEnd, "f1"), func(e *Event) { e.T = at(56) })),
			fail: []string{InvDetect}, msg: "hostd status showed rig/a up (working) 5s after"},
		{name: "run stopped watching before the bound",
			change: without(func(e Event) bool { return e.Kind == KindStatus && e.T.After(at(55)) })},
		{name: "recovery from overlapping faults",
			change: with(
				Event{T: at(100), Kind: KindFault, Phase: PhaseStart, Agent: "rig/b", Op: "f3", Fault: FaultAgentSigstop, Bound: Duration(5 * time.Second)},
				Event{T: at(105), Kind: KindFault, Phase: PhaseStart, Agent: "rig/b", Op: "f4", Fault: FaultUDPBlock, Bound: Duration(30 * time.Second)},
				Event{T: at(110), Kind: KindFault, Phase: PhaseEnd, Agent: "rig/b", Op: "f3", Fault: FaultAgentSigstop},
				Event{T: at(112), Kind: KindStatus, Phase: PhaseObserve, Agent: "rig/b", State: "disconnected"},
				Event{T: at(130), Kind: KindFault, Phase: PhaseEnd, Agent: "rig/b", Op: "f4", Fault: FaultUDPBlock},
				Event{T: at(135), Kind: KindStatus, Phase: PhaseObserve, Agent: "rig/b", State: "connected"})},
		{name: "the same recovery without the overlapping fault",
			change: with(
				Event{T: at(100), Kind: KindFault, Phase: PhaseStart, Agent: "rig/b", Op: "f3", Fault: FaultAgentSigstop, Bound: Duration(5 * time.Second)},
				Event{T: at(110), Kind: KindFault, Phase: PhaseEnd, Agent: "rig/b", Op: "f3", Fault: FaultAgentSigstop},
				Event{T: at(112), Kind: KindStatus, Phase: PhaseObserve, Agent: "rig/b", State: "disconnected"},
				Event{T: at(135), Kind: KindStatus, Phase: PhaseObserve, Agent: "rig/b", State: "connected"}),
			fail: []string{InvRecovery}, msg: "fault f3 (agent-sigstop): rig/b back after 25s, bound 5s"},

		// no leak
		{name: "goroutine leak",
			change: edit(is(KindSample, PhaseAfter, ""), func(e *Event) { e.Goroutines = 121 }),
			fail:   []string{InvLeak}, msg: "goroutines: 121 after, baseline median 100, margin 20"},
		{name: "goroutines at the margin",
			change: edit(is(KindSample, PhaseAfter, ""), func(e *Event) { e.Goroutines = 120 })},
		{name: "fd leak",
			change: edit(is(KindSample, PhaseAfter, ""), func(e *Event) { e.FDs = 71 }),
			fail:   []string{InvLeak}, msg: "fds: 71 after, baseline median 50"},
		{name: "rss leak",
			change: edit(is(KindSample, PhaseAfter, ""), func(e *Event) { e.RSS = 131 * mib }),
			fail:   []string{InvLeak}, msg: "rss: 131.0 MiB after, baseline median 100.0 MiB"},
		{name: "disk over budget",
			change: edit(is(KindDisk, PhaseObserve, ""), func(e *Event) { e.Bytes = 1001 }),
			fail:   []string{InvLeak}, msg: "disk: 1001 bytes used, over the budget of 1000"},
		{name: "no after sample",
			change: without(is(KindSample, PhaseAfter, "")),
			fail:   []string{InvLeak}, msg: "not measured: no after sample"},
		{name: "no baseline sample",
			change: without(is(KindSample, PhaseBaseline, "")),
			fail:   []string{InvLeak}, msg: "not measured: no baseline sample"},

		{name: "empty history",
			change: func([]Event) []Event { return nil },
			fail:   []string{InvNudge, InvPush, InvRelay, InvLeak}, msg: "nothing to check"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			evs := cleanHistory()
			if tt.change != nil {
				evs = tt.change(evs)
			}
			r := Check(evs, Options{})
			if len(r.Invariants) != len(invariants) {
				t.Fatalf("%d invariant results, want %d", len(r.Invariants), len(invariants))
			}
			for i, inv := range r.Invariants {
				if inv.Name != invariants[i] {
					t.Errorf("invariant %d is %q, want %q", i, inv.Name, invariants[i])
				}
				wantFail := slices.Contains(tt.fail, inv.Name)
				if inv.OK() == wantFail {
					t.Errorf("%s: OK=%v, want %v; violations: %v", inv.Name, inv.OK(), !wantFail, messages(inv))
					continue
				}
				if !wantFail {
					continue
				}
				found := false
				for _, v := range inv.Violations {
					if v.Invariant != inv.Name {
						t.Errorf("violation %q names invariant %q, listed under %q", v.Message, v.Invariant, inv.Name)
					}
					found = found || strings.Contains(v.Message, tt.msg)
				}
				if !found {
					t.Errorf("%s: no violation says %q; got %v", inv.Name, tt.msg, messages(inv))
				}
			}
			if r.OK() != (len(tt.fail) == 0) {
				t.Errorf("Report.OK() = %v with failures %v", r.OK(), tt.fail)
			}
			if len(r.Environment) != tt.env {
				t.Errorf("%d environment failures listed, want %d: %v", len(r.Environment), tt.env, r.Environment)
			}
		})
	}
}

// messages lists inv's violation messages.
func messages(inv InvariantResult) []string {
	var out []string
	for _, v := range inv.Violations {
		out = append(out, v.Message)
	}
	return out
}

func TestCheckClean(t *testing.T) {
	r := Check(cleanHistory(), Options{})
	if !r.OK() {
		t.Fatalf("clean history fails:\n%s", text(t, r))
	}
	wantChecked := map[string]int{
		InvNudge:    2, // n1 typed once, n2 expired
		InvPush:     3, // p1, two fscks
		InvData:     2, // the host's and the container's write of notes.txt
		InvRelay:    3, // r1 ok, r2 failed, r3 indeterminate
		InvRecovery: 3, // f1 on rig/a, f2 on rig/a and rig/b
		InvDetect:   1, // f1 on rig/a
		InvLeak:     4, // goroutines, fds, rss, one disk observation
	}
	for _, inv := range r.Invariants {
		if inv.Checked != wantChecked[inv.Name] {
			t.Errorf("%s checked %d, want %d", inv.Name, inv.Checked, wantChecked[inv.Name])
		}
	}
	if r.Seed != 42 {
		t.Errorf("seed %d, want 42", r.Seed)
	}
	wantOps := map[string]OpCount{
		KindNudge: {Invoked: 3, OK: 2, Failed: 1},
		KindPush:  {Invoked: 1, OK: 1},
		KindRelay: {Invoked: 3, OK: 1, Failed: 1, Indeterminate: 1},
		KindData:  {Invoked: 2, OK: 2},
		KindPeek:  {Invoked: 1, OK: 1},
	}
	for k, want := range wantOps {
		if r.Ops[k] != want {
			t.Errorf("ops %s: %+v, want %+v", k, r.Ops[k], want)
		}
	}
	if len(r.Ops) != len(wantOps) {
		t.Errorf("ops of %d kinds, want %d: %v", len(r.Ops), len(wantOps), r.Ops)
	}
	if r.Faults[FaultAgentSigkill] != 1 || r.Faults[FaultHostdKill9] != 1 || len(r.Faults) != 2 {
		t.Errorf("faults %v", r.Faults)
	}
	// f1: rig/a back 5s after; f2: rig/a after 5s, rig/b after 10s
	if r.Recovery[FaultAgentSigkill] != 5*time.Second || r.Recovery[FaultHostdKill9] != 10*time.Second {
		t.Errorf("recovery %v", r.Recovery)
	}

	// the order of the events does not matter
	shuffled := cleanHistory()
	slices.Reverse(shuffled)
	if r2 := Check(shuffled, Options{}); !r2.OK() {
		t.Errorf("clean history reversed fails:\n%s", text(t, r2))
	}
}

func TestCheckMargins(t *testing.T) {
	evs := edit(is(KindSample, PhaseAfter, ""), func(e *Event) { e.Goroutines = 110; e.FDs = 55; e.RSS = 120 * mib })(cleanHistory())
	tests := []struct {
		name string
		m    Margins
		ok   bool
	}{
		{"defaults", Margins{}, true},
		{"tight goroutines", Margins{Goroutines: 9}, false},
		{"tight fds", Margins{FDs: 4}, false},
		{"tight rss", Margins{RSS: 0.1}, false},
		{"exact", Margins{Goroutines: 10, FDs: 5, RSS: 0.2}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inv, _ := Check(evs, Options{Margin: tt.m}).Invariant(InvLeak)
			if inv.OK() != tt.ok {
				t.Errorf("OK=%v, want %v: %v", inv.OK(), tt.ok, messages(inv))
			}
		})
	}
}

func TestViolationFaults(t *testing.T) {
	evs := with(
		Event{T: at(200.5), Kind: KindTyped, Phase: PhaseObserve, Agent: "rig/a", NudgeID: "h-1"},
		// overlaps the nudge (10..11) within FaultWindow
		Event{T: at(5), Kind: KindFault, Phase: PhaseStart, Op: "near", Fault: FaultTCPCut},
		Event{T: at(7), Kind: KindFault, Phase: PhaseEnd, Op: "near", Fault: FaultTCPCut, Bound: Duration(time.Minute)},
		// spans the nudge
		Event{T: at(1), Kind: KindFault, Phase: PhaseStart, Agent: "rig/a", Op: "long", Fault: FaultClockStep},
		// neither
		Event{T: at(17), Kind: KindFault, Phase: PhaseStart, Op: "later", Fault: FaultDiskFull},
		Event{T: at(18), Kind: KindFault, Phase: PhaseEnd, Op: "later", Fault: FaultDiskFull},
	)(cleanHistory())
	inv, _ := Check(evs, Options{}).Invariant(InvNudge)
	if len(inv.Violations) != 1 {
		t.Fatalf("violations %v, want the nudge typed twice", messages(inv))
	}
	v := inv.Violations[0]
	var ops, faults []string
	for _, e := range v.Events {
		ops = append(ops, e.Kind+" "+e.Phase+" "+e.Op)
	}
	for _, e := range v.Faults {
		faults = append(faults, e.Phase+" "+e.Op)
	}
	wantOps := []string{"nudge invoke n1", "nudge ok n1", "typed observe ", "typed observe "}
	if !slices.Equal(ops, wantOps) {
		t.Errorf("events %q, want %q", ops, wantOps)
	}
	wantFaults := []string{"start long", "start near", "end near"}
	if !slices.Equal(faults, wantFaults) {
		t.Errorf("faults %q, want %q", faults, wantFaults)
	}
}

func TestWriteText(t *testing.T) {
	evs := then(
		with(Event{T: at(200.5), Kind: KindTyped, Phase: PhaseObserve, Agent: "rig/a", NudgeID: "h-1"}),
		edit(is(KindDisk, PhaseObserve, ""), func(e *Event) { e.Bytes = 1001 }),
	)(cleanHistory())
	out := text(t, Check(evs, Options{}))
	for _, want := range []string{
		"soak history: FAIL, seed 42",
		"relay    invoked 3, ok 1, failed 1, indeterminate 1",
		"hostd-kill9          1, worst recovery 10s",
		"nudge exactly once     checked 2      FAIL (1 violation)",
		"push durable           checked 3      PASS",
		"VIOLATION nudge exactly once: nudge op n1 (h-1) typed 2 times",
		"    00:00:10.000 nudge invoke agent=rig/a op=n1 mode=immediate",
		"    00:03:20.500 typed observe agent=rig/a nudge_id=h-1",
		"VIOLATION no leak: disk: 1001 bytes used",
		"    00:03:11.000 disk observe bytes=1001 budget=1000",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
}

// text is r.WriteText's output.
func text(t *testing.T, r Report) string {
	t.Helper()
	var b strings.Builder
	if err := r.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestSafety: the check made during a run reports what no later event can
// undo, and nothing that only the end can judge.
func TestSafety(t *testing.T) {
	// midRun is the clean history cut before the end's observations.
	midRun := without(func(e Event) bool { return e.T.After(at(199)) })
	tests := []struct {
		name   string
		change func([]Event) []Event
		want   string // in the one violation; "" for none
	}{
		{name: "clean, whole"},
		{name: "mid-run: nothing typed, ran or landed yet", change: midRun},
		{name: "nudge typed twice",
			change: with(Event{T: at(200.5), Kind: KindTyped, Phase: PhaseObserve, Agent: "rig/a", NudgeID: "h-1"}),
			want:   "nudge op n1 (h-1) typed 2 times"},
		{name: "nudge the client saw fail typed twice",
			change: with(
				Event{T: at(200.5), Kind: KindTyped, Phase: PhaseObserve, Agent: "rig/a", Op: "n3"},
				Event{T: at(200.6), Kind: KindTyped, Phase: PhaseObserve, Agent: "rig/a", Op: "n3"}),
			want: "nudge op n3 (client saw no acceptance) typed 2 times"},
		{name: "relay ran twice",
			change: with(Event{T: at(201.5), Kind: KindRan, Phase: PhaseObserve, Op: "r1"}),
			want:   "relay op r1 succeeded but ran 2 times"},
		{name: "indeterminate relay ran twice",
			change: with(Event{T: at(201.5), Kind: KindRan, Phase: PhaseObserve, Op: "r3"}, Event{T: at(201.6), Kind: KindRan, Phase: PhaseObserve, Op: "r3"}),
			want:   "relay op r3 (indeterminate) ran 2 times"},
		{name: "mid-run, a typed line whose acceptance is not written yet",
			change: then(midRun, with(Event{T: at(150), Kind: KindTyped, Phase: PhaseObserve, Agent: "rig/b", NudgeID: "h-99"}))},
		{name: "mid-run, a relay ran whose invoke is not written yet",
			change: then(midRun, with(Event{T: at(150), Kind: KindRan, Phase: PhaseObserve, Op: "r9"}))},
		{name: "mid-run, a nudge typed before the client's acceptance is written",
			change: then(midRun, without(is(KindNudge, PhaseOK, "n1")),
				with(Event{T: at(150), Kind: KindTyped, Phase: PhaseObserve, Agent: "rig/a", Op: "n1", NudgeID: "h-1"}))},
		{name: "mid-run, the same nudge typed twice before its acceptance is written",
			change: then(midRun, without(is(KindNudge, PhaseOK, "n1")),
				with(Event{T: at(150), Kind: KindTyped, Phase: PhaseObserve, Agent: "rig/a", Op: "n1", NudgeID: "h-1"},
					Event{T: at(151), Kind: KindTyped, Phase: PhaseObserve, Agent: "rig/a", Op: "n1", NudgeID: "h-1"})),
			want: "nudge op n1 (client saw no acceptance) typed 2 times"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			evs := cleanHistory()
			if tc.change != nil {
				evs = tc.change(evs)
			}
			vs := Safety(evs)
			switch {
			case tc.want == "" && len(vs) != 0:
				t.Errorf("violations %v, want none", vs)
			case tc.want != "" && (len(vs) != 1 || !strings.Contains(vs[0].Message, tc.want)):
				t.Errorf("violations %v, want one saying %q", vs, tc.want)
			}
		})
	}
	// Check still reports the violations only the end can judge.
	if r := Check(midRun(cleanHistory()), Options{}); r.OK() {
		t.Error("Check passes a history cut mid-run: it judges what Safety leaves to the end")
	}
}
