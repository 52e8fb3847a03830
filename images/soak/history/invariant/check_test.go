package invariant

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/polecat-sidecar/sidecar/images/soak/history"
	"github.com/polecat-sidecar/sidecar/images/soak/history/internal/fixture"
)

// without drops the events matching drop.
func without(drop func(history.Event) bool) func([]history.Event) []history.Event {
	return func(evs []history.Event) []history.Event { return slices.DeleteFunc(evs, drop) }
}

// edit changes the events matching match.
func edit(match func(history.Event) bool, change func(*history.Event)) func([]history.Event) []history.Event {
	return func(evs []history.Event) []history.Event {
		for i := range evs {
			if match(evs[i]) {
				change(&evs[i])
			}
		}
		return evs
	}
}

// is matches events of kind and phase whose op is op ("" for any).
func is(kind, phase, op string) func(history.Event) bool {
	return func(e history.Event) bool { return e.Kind == kind && e.Phase == phase && (op == "" || e.Op == op) }
}

// backAfterF1 gives fault f1 (which ends at 55 s) a bound of 3 s and has
// rig/a's first observation back after it (at 60 s) made at sec instead,
// saying its tunnel connected at since.
func backAfterF1(sec float64, since time.Time) func([]history.Event) []history.Event {
	return then(
		edit(is(history.KindFault, history.PhaseEnd, "f1"), func(e *history.Event) { e.Bound = history.Duration(3 * time.Second) }),
		edit(func(e history.Event) bool {
			return e.Kind == history.KindStatus && e.Agent == "rig/a" && e.T.Equal(fixture.At(60))
		},
			func(e *history.Event) { e.T, e.Since = fixture.At(sec), since }))
}

// then applies changes in order.
func then(changes ...func([]history.Event) []history.Event) func([]history.Event) []history.Event {
	return func(evs []history.Event) []history.Event {
		for _, c := range changes {
			evs = c(evs)
		}
		return evs
	}
}

func TestCheck(t *testing.T) {
	tests := []struct {
		name   string
		change func([]history.Event) []history.Event // of the clean history; nil for none
		fail   []string                              // the invariants that must fail
		msg    string                                // in a violation of each
		env    int                                   // the environment failures the report lists
	}{
		{name: "clean"},

		// nudge exactly once
		{name: "nudge typed twice",
			change: fixture.With(history.Event{T: fixture.At(200.5), Kind: history.KindTyped, Phase: history.PhaseObserve, Agent: "rig/a", NudgeID: "h-1"}),
			fail:   []string{InvNudge}, msg: "nudge op n1 (h-1) typed 2 times"},
		{name: "nudge accepted, never typed, no outcome",
			change: without(is(history.KindTyped, history.PhaseObserve, "")),
			fail:   []string{InvNudge}, msg: "nudge op n1 (h-1) silently lost"},
		{name: "nudge expired without reason",
			change: edit(is(history.KindNudge, history.PhaseOutcome, ""), func(e *history.Event) { e.Reason = "" }),
			fail:   []string{InvNudge}, msg: "nudge op n2 (h-2) expired without a reason"},
		{name: "nudge delivered but never typed",
			change: edit(is(history.KindNudge, history.PhaseOutcome, ""), func(e *history.Event) { e.Outcome = history.OutcomeDelivered }),
			fail:   []string{InvNudge}, msg: "nudge op n2 (h-2) reported delivered"},
		{name: "nudge typed into the wrong pane",
			change: edit(is(history.KindTyped, history.PhaseObserve, ""), func(e *history.Event) { e.Agent = "rig/b" }),
			fail:   []string{InvNudge}, msg: "h-1"},
		{name: "nudge typed that was never accepted",
			change: fixture.With(history.Event{T: fixture.At(200.5), Kind: history.KindTyped, Phase: history.PhaseObserve, Agent: "rig/b", NudgeID: "h-99"}),
			fail:   []string{InvNudge}, msg: `nudge "h-99" typed into rig/b's pane but never accepted`},
		{name: "failed nudge typed once, matched by op",
			change: fixture.With(history.Event{T: fixture.At(200.5), Kind: history.KindTyped, Phase: history.PhaseObserve, Agent: "rig/a", Op: "n3", NudgeID: "h-3"})},
		{name: "failed nudge typed twice",
			change: fixture.With(
				history.Event{T: fixture.At(200.5), Kind: history.KindTyped, Phase: history.PhaseObserve, Agent: "rig/a", Op: "n3"},
				history.Event{T: fixture.At(200.6), Kind: history.KindTyped, Phase: history.PhaseObserve, Agent: "rig/a", Op: "n3"}),
			fail: []string{InvNudge}, msg: "nudge op n3"},

		// push durable
		{name: "push ok but not landed",
			change: without(func(e history.Event) bool { return e.Kind == history.KindLanded && e.Where == history.WhereRepo }),
			fail:   []string{InvPush}, msg: "push op p1 acknowledged but commit c1 not in hostd's repository"},
		{name: "push in repo but not origin after origin-reachable",
			change: without(func(e history.Event) bool { return e.Kind == history.KindLanded && e.Where == history.WhereOrigin }),
			fail:   []string{InvPush}, msg: "push op p1 acknowledged but commit c1 not in origin"},
		{name: "push not in origin, origin never reachable",
			change: without(func(e history.Event) bool {
				return e.Kind == history.KindOriginReachable || (e.Kind == history.KindLanded && e.Where == history.WhereOrigin)
			})},
		{name: "failed push not landed",
			change: then(
				edit(is(history.KindPush, history.PhaseOK, "p1"), func(e *history.Event) { e.Phase = history.PhaseFail; e.Err = "remote hung up" }),
				without(is(history.KindLanded, history.PhaseObserve, "")),
				without(is(history.KindOriginReachable, history.PhaseObserve, "")))},
		{name: "fsck not ok",
			change: edit(func(e history.Event) bool { return e.Kind == history.KindFsck && e.Where == history.WhereOrigin },
				func(e *history.Event) { e.OK = false; e.Err = "error: missing blob" }),
			fail: []string{InvPush}, msg: "git fsck of origin failed"},

		// data not lost
		{name: "host write overwritten by the container's, no conflict copy",
			change: without(func(e history.Event) bool { return e.Kind == history.KindFile && e.Of != "" }),
			fail:   []string{InvData}, msg: "data op d1: rig/a's host write of notes.txt"},
		{name: "conflict copy on the container side",
			change: edit(func(e history.Event) bool { return e.Kind == history.KindFile && e.Of != "" }, func(e *history.Event) { e.Side = history.SideContainer })},
		{name: "an earlier write's line lost",
			change: fixture.With(
				history.Event{T: fixture.At(29), Kind: history.KindData, Phase: history.PhaseInvoke, Agent: "rig/a", Op: "d0", Side: history.SideHost, Path: "notes.txt", Hash: "0000"},
				history.Event{T: fixture.At(29.5), Kind: history.KindData, Phase: history.PhaseOK, Agent: "rig/a", Op: "d0"}),
			fail: []string{InvData}, msg: "data op d0"},
		{name: "an earlier write's line kept beside a later one",
			change: fixture.With(
				history.Event{T: fixture.At(29), Kind: history.KindData, Phase: history.PhaseInvoke, Agent: "rig/a", Op: "d0", Side: history.SideHost, Path: "notes.txt", Hash: "0000"},
				history.Event{T: fixture.At(29.5), Kind: history.KindData, Phase: history.PhaseOK, Agent: "rig/a", Op: "d0"},
				history.Event{T: fixture.At(210), Kind: history.KindFile, Phase: history.PhaseObserve, Agent: "rig/a", Side: history.SideContainer, Path: "notes.txt", Hash: "0000"})},
		{name: "a write that failed wrote nothing to keep",
			change: then(
				edit(is(history.KindData, history.PhaseOK, "d1"), func(e *history.Event) { e.Phase = history.PhaseFail; e.Err = "no space left on device" }),
				without(func(e history.Event) bool { return e.Kind == history.KindFile && e.Of != "" }))},
		{name: "a write with no outcome may have written: checked",
			change: then(
				without(is(history.KindData, history.PhaseOK, "d1")),
				without(func(e history.Event) bool { return e.Kind == history.KindFile && e.Of != "" })),
			fail: []string{InvData}, msg: "data op d1"},
		{name: "file observed absent",
			change: edit(is(history.KindFile, history.PhaseObserve, ""), func(e *history.Event) { e.Hash = "" }),
			fail:   []string{InvData}, msg: "data op d2"},
		{name: "no final observation",
			change: without(is(history.KindFile, history.PhaseObserve, "")),
			fail:   []string{InvData}, msg: "agent rig/a: no final observation"},

		// relay exactly once
		{name: "relay ok, never ran",
			change: without(is(history.KindRan, history.PhaseObserve, "r1")),
			fail:   []string{InvRelay}, msg: "relay op r1 succeeded but ran 0 times"},
		{name: "relay ran twice",
			change: fixture.With(history.Event{T: fixture.At(201.5), Kind: history.KindRan, Phase: history.PhaseObserve, Op: "r1"}),
			fail:   []string{InvRelay}, msg: "relay op r1 succeeded but ran 2 times"},
		{name: "relay failed but ran once",
			change: fixture.With(history.Event{T: fixture.At(201.5), Kind: history.KindRan, Phase: history.PhaseObserve, Op: "r2"})},
		{name: "relay indeterminate ran twice",
			change: fixture.With(
				history.Event{T: fixture.At(201.5), Kind: history.KindRan, Phase: history.PhaseObserve, Op: "r3"},
				history.Event{T: fixture.At(201.6), Kind: history.KindRan, Phase: history.PhaseObserve, Op: "r3"}),
			fail: []string{InvRelay}, msg: "relay op r3 (indeterminate) ran 2 times"},
		{name: "relay ran but never invoked",
			change: fixture.With(history.Event{T: fixture.At(201.5), Kind: history.KindRan, Phase: history.PhaseObserve, Op: "r9"}),
			fail:   []string{InvRelay}, msg: `relay op "r9" ran but was never invoked`},

		// recovery within bound
		// down shown within bound
		{name: "status still up after the detect bound",
			change: edit(func(e history.Event) bool { return e.Kind == history.KindStatus && e.T.Equal(fixture.At(54.5)) }, func(e *history.Event) { e.State = "working" }),
			fail:   []string{InvDetect}, msg: "fault f1 (agent-sigkill): hostd status showed rig/a up (working) 4.5s after"},
		{name: "up, asked for before the fault's end and answered after it: not judged",
			change: edit(func(e history.Event) bool { return e.Kind == history.KindStatus && e.T.Equal(fixture.At(54.5)) }, func(e *history.Event) { e.State, e.Answered = "working", fixture.At(55.5) })},
		{name: "up, answered before the fault's end",
			change: edit(func(e history.Event) bool { return e.Kind == history.KindStatus && e.T.Equal(fixture.At(54.5)) }, func(e *history.Event) { e.State, e.Answered = "working", fixture.At(54.9) }),
			fail:   []string{InvDetect}, msg: "fault f1 (agent-sigkill): hostd status showed rig/a up (working) 4.5s after"},
		{name: "up before the detect bound",
			change: edit(func(e history.Event) bool { return e.Kind == history.KindStatus && e.T.Equal(fixture.At(52)) }, func(e *history.Event) { e.State = "working" })},
		{name: "no observation between the detect bound and the end: not judged",
			change: then(
				without(func(e history.Event) bool { return e.Kind == history.KindStatus && e.T.Equal(fixture.At(54.5)) }),
				edit(func(e history.Event) bool { return e.Kind == history.KindStatus && e.T.Equal(fixture.At(52)) }, func(e *history.Event) { e.State = "working" }))},
		{name: "a fault shorter than its detect bound is not judged",
			change: then(
				edit(is(history.KindFault, history.PhaseStart, "f1"), func(e *history.Event) { e.Detect = history.Duration(10 * time.Second) }),
				edit(func(e history.Event) bool { return e.Kind == history.KindStatus && e.T.Equal(fixture.At(54.5)) }, func(e *history.Event) { e.State = "working" }))},

		{name: "recovery beyond bound",
			change: edit(is(history.KindFault, history.PhaseEnd, "f1"), func(e *history.Event) { e.Bound = history.Duration(3 * time.Second) }),
			fail:   []string{InvRecovery}, msg: "fault f1 (agent-sigkill): rig/a back after 5s, bound 3s"},
		{name: "a late observation of a tunnel that connected in time",
			change: backAfterF1(60, fixture.At(57))},
		{name: "a tunnel that connected late, observed at once",
			change: backAfterF1(58.5, fixture.At(58.5)),
			fail:   []string{InvRecovery}, msg: "fault f1 (agent-sigkill): rig/a back after 3.5s, bound 3s"},
		{name: "a tunnel that outlived a fault that leaves tunnels be is back when it ends",
			change: then(backAfterF1(60, fixture.At(40)),
				edit(func(e history.Event) bool { return e.Op == "f1" }, func(e *history.Event) { e.Fault = history.FaultAgentSigstop }))},
		{name: "a tunnel from before a kill is a dead one hostd has not noticed, not back",
			change: then(backAfterF1(60, fixture.At(40)), without(func(e history.Event) bool { return e.Op == "f2" })),
			fail:   []string{InvRecovery}, msg: "fault f1 (agent-sigkill): rig/a back after 25s, bound 3s"},
		{name: "a fault that begins before the agent is seen back restarts the clock",
			change: then(
				edit(is(history.KindFault, history.PhaseEnd, "f1"), func(e *history.Event) { e.Bound = history.Duration(3 * time.Second) }),
				fixture.With(history.Event{T: fixture.At(57), Kind: history.KindFault, Phase: history.PhaseStart, Op: "f4", Fault: history.FaultHostdKill9},
					history.Event{T: fixture.At(59), Kind: history.KindFault, Phase: history.PhaseEnd, Op: "f4", Fault: history.FaultHostdKill9, Bound: history.Duration(3 * time.Second)}))},
		{name: "never back",
			change: then(
				without(func(e history.Event) bool {
					return e.Kind == history.KindStatus && e.Agent == "rig/a" && e.T.After(fixture.At(55))
				}),
				fixture.With(history.Event{T: fixture.At(150), Kind: history.KindStatus, Phase: history.PhaseObserve, Agent: "rig/b", State: "idle"})),
			fail: []string{InvRecovery}, msg: "rig/a not back within"},
		{name: "a fault the machine could not undo is not judged, and is listed",
			change: then(
				without(func(e history.Event) bool {
					return e.Kind == history.KindStatus && e.Agent == "rig/a" && e.T.After(fixture.At(55))
				}),
				fixture.With(history.Event{T: fixture.At(150), Kind: history.KindStatus, Phase: history.PhaseObserve, Agent: "rig/b", State: "idle"}),
				edit(is(history.KindFault, history.PhaseEnd, "f1"), func(e *history.Event) { e.Phase, e.Err = history.PhaseFail, "docker unpause: hung" })),
			env: 1},
		{name: "a fault undone another way is judged, and listed",
			change: then(
				without(func(e history.Event) bool {
					return e.Kind == history.KindStatus && e.Agent == "rig/a" && e.T.After(fixture.At(55))
				}),
				fixture.With(history.Event{T: fixture.At(150), Kind: history.KindStatus, Phase: history.PhaseObserve, Agent: "rig/b", State: "idle"}),
				edit(is(history.KindFault, history.PhaseEnd, "f1"), func(e *history.Event) { e.Err = "docker unpause: hung; thawed through the freezer" })),
			fail: []string{InvRecovery}, msg: "rig/a not back within", env: 1},
		{name: "a fault not undone, begun after the bound, hides no miss before it",
			change: then(
				without(func(e history.Event) bool {
					return e.Kind == history.KindStatus && e.Agent == "rig/a" && e.T.After(fixture.At(55))
				}),
				fixture.With(history.Event{T: fixture.At(150), Kind: history.KindStatus, Phase: history.PhaseObserve, Agent: "rig/b", State: "idle"},
					history.Event{T: fixture.At(107), Kind: history.KindStatus, Phase: history.PhaseObserve, Agent: "rig/a", State: "disconnected"},
					history.Event{T: fixture.At(110), Kind: history.KindFault, Phase: history.PhaseStart, Agent: "rig/a", Op: "f5", Fault: history.FaultContainerPause},
					history.Event{T: fixture.At(120), Kind: history.KindFault, Phase: history.PhaseFail, Agent: "rig/a", Op: "f5", Fault: history.FaultContainerPause, Err: "docker unpause: hung"})),
			fail: []string{InvRecovery}, msg: "rig/a not back within", env: 1},
		{name: "a fault begun after the bound, the agent seen down at it, does not restart the clock",
			change: then(
				edit(is(history.KindFault, history.PhaseEnd, "f1"), func(e *history.Event) { e.Bound = history.Duration(3 * time.Second) }),
				fixture.With(history.Event{T: fixture.At(58.2), Kind: history.KindStatus, Phase: history.PhaseObserve, Agent: "rig/a", State: "disconnected"},
					history.Event{T: fixture.At(58.5), Kind: history.KindFault, Phase: history.PhaseStart, Agent: "rig/a", Op: "f5", Fault: history.FaultAgentSigstop, Bound: history.Duration(30 * time.Second)},
					history.Event{T: fixture.At(59), Kind: history.KindFault, Phase: history.PhaseEnd, Agent: "rig/a", Op: "f5", Fault: history.FaultAgentSigstop, Bound: history.Duration(30 * time.Second)})),
			fail: []string{InvRecovery}, msg: "fault f1 (agent-sigkill): rig/a back after 5s, bound 3s"},
		{name: "an undoing the harness finished another way: recovery counts from when it was done",
			change: then(
				edit(is(history.KindFault, history.PhaseEnd, "f1"), func(e *history.Event) {
					e.Bound, e.Err, e.Done = history.Duration(3*time.Second), "docker unpause: hung; thawed through the freezer", fixture.At(58)
				})),
			env: 1},
		{name: "the same without Done: back too late",
			change: then(
				edit(is(history.KindFault, history.PhaseEnd, "f1"), func(e *history.Event) { e.Bound = history.Duration(3 * time.Second) }),
				without(func(e history.Event) bool {
					return e.Kind == history.KindStatus && e.Agent == "rig/a" && e.T.Equal(fixture.At(60))
				}),
				fixture.With(history.Event{T: fixture.At(60), Kind: history.KindStatus, Phase: history.PhaseObserve, Agent: "rig/a", State: "connected", Since: fixture.At(59.5)})),
			fail: []string{InvRecovery}, msg: "rig/a back after 4.5s, bound 3s"},
		{name: "a tunnel that connected while the kill was being injected is a new one",
			change: then(backAfterF1(60, fixture.At(51)),
				edit(is(history.KindFault, history.PhaseStart, "f1"), func(e *history.Event) { e.Done = fixture.At(52) }))},
		{name: "the same kill stamped when its injection returned: that tunnel is taken for a dead one",
			change: then(backAfterF1(60, fixture.At(51)),
				edit(is(history.KindFault, history.PhaseStart, "f1"), func(e *history.Event) { e.T = fixture.At(52) })),
			fail: []string{InvRecovery}, msg: "fault f1 (agent-sigkill): rig/a back after 25s, bound 3s"},
		{name: "detection counts from when the injection returned",
			change: then(
				edit(is(history.KindFault, history.PhaseStart, "f1"), func(e *history.Event) { e.Done = fixture.At(51.5) }),
				fixture.With(history.Event{T: fixture.At(55), Answered: fixture.At(55), Kind: history.KindStatus, Phase: history.PhaseObserve, Agent: "rig/a", State: "working"}),
				edit(is(history.KindFault, history.PhaseEnd, "f1"), func(e *history.Event) { e.T = fixture.At(56) }))},
		{name: "the same counted from when the injection began",
			change: then(
				fixture.With(history.Event{T: fixture.At(55), Answered: fixture.At(55), Kind: history.KindStatus, Phase: history.PhaseObserve, Agent: "rig/a", State: "working"}),
				edit(is(history.KindFault, history.PhaseEnd, "f1"), func(e *history.Event) { e.T = fixture.At(56) })),
			fail: []string{InvDetect}, msg: "hostd status showed rig/a up (working) 5s after"},
		{name: "run stopped watching before the bound",
			change: without(func(e history.Event) bool { return e.Kind == history.KindStatus && e.T.After(fixture.At(55)) })},
		{name: "recovery from overlapping faults",
			change: fixture.With(
				history.Event{T: fixture.At(100), Kind: history.KindFault, Phase: history.PhaseStart, Agent: "rig/b", Op: "f3", Fault: history.FaultAgentSigstop, Bound: history.Duration(5 * time.Second)},
				history.Event{T: fixture.At(105), Kind: history.KindFault, Phase: history.PhaseStart, Agent: "rig/b", Op: "f4", Fault: history.FaultUDPBlock, Bound: history.Duration(30 * time.Second)},
				history.Event{T: fixture.At(110), Kind: history.KindFault, Phase: history.PhaseEnd, Agent: "rig/b", Op: "f3", Fault: history.FaultAgentSigstop},
				history.Event{T: fixture.At(112), Kind: history.KindStatus, Phase: history.PhaseObserve, Agent: "rig/b", State: "disconnected"},
				history.Event{T: fixture.At(130), Kind: history.KindFault, Phase: history.PhaseEnd, Agent: "rig/b", Op: "f4", Fault: history.FaultUDPBlock},
				history.Event{T: fixture.At(135), Kind: history.KindStatus, Phase: history.PhaseObserve, Agent: "rig/b", State: "connected"})},
		{name: "the same recovery without the overlapping fault",
			change: fixture.With(
				history.Event{T: fixture.At(100), Kind: history.KindFault, Phase: history.PhaseStart, Agent: "rig/b", Op: "f3", Fault: history.FaultAgentSigstop, Bound: history.Duration(5 * time.Second)},
				history.Event{T: fixture.At(110), Kind: history.KindFault, Phase: history.PhaseEnd, Agent: "rig/b", Op: "f3", Fault: history.FaultAgentSigstop},
				history.Event{T: fixture.At(112), Kind: history.KindStatus, Phase: history.PhaseObserve, Agent: "rig/b", State: "disconnected"},
				history.Event{T: fixture.At(135), Kind: history.KindStatus, Phase: history.PhaseObserve, Agent: "rig/b", State: "connected"}),
			fail: []string{InvRecovery}, msg: "fault f3 (agent-sigstop): rig/b back after 25s, bound 5s"},

		// no leak
		{name: "goroutine leak",
			change: edit(is(history.KindSample, history.PhaseAfter, ""), func(e *history.Event) { e.Goroutines = 121 }),
			fail:   []string{InvLeak}, msg: "goroutines: 121 after, baseline median 100, margin 20"},
		{name: "goroutines at the margin",
			change: edit(is(history.KindSample, history.PhaseAfter, ""), func(e *history.Event) { e.Goroutines = 120 })},
		{name: "fd leak",
			change: edit(is(history.KindSample, history.PhaseAfter, ""), func(e *history.Event) { e.FDs = 71 }),
			fail:   []string{InvLeak}, msg: "fds: 71 after, baseline median 50"},
		{name: "rss leak",
			change: edit(is(history.KindSample, history.PhaseAfter, ""), func(e *history.Event) { e.RSS = 131 * fixture.MiB }),
			fail:   []string{InvLeak}, msg: "rss: 131.0 MiB after, baseline median 100.0 MiB"},
		{name: "disk over budget",
			change: edit(is(history.KindDisk, history.PhaseObserve, ""), func(e *history.Event) { e.Bytes = 1001 }),
			fail:   []string{InvLeak}, msg: "disk: 1001 bytes used, over the budget of 1000"},
		{name: "no after sample",
			change: without(is(history.KindSample, history.PhaseAfter, "")),
			fail:   []string{InvLeak}, msg: "not measured: no after sample"},
		{name: "no baseline sample",
			change: without(is(history.KindSample, history.PhaseBaseline, "")),
			fail:   []string{InvLeak}, msg: "not measured: no baseline sample"},

		{name: "empty history",
			change: func([]history.Event) []history.Event { return nil },
			fail:   []string{InvNudge, InvPush, InvRelay, InvLeak}, msg: "nothing to check"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			evs := fixture.Clean()
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
	r := Check(fixture.Clean(), Options{})
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
		history.KindNudge: {Invoked: 3, OK: 2, Failed: 1},
		history.KindPush:  {Invoked: 1, OK: 1},
		history.KindRelay: {Invoked: 3, OK: 1, Failed: 1, Indeterminate: 1},
		history.KindData:  {Invoked: 2, OK: 2},
		history.KindPeek:  {Invoked: 1, OK: 1},
	}
	for k, want := range wantOps {
		if r.Ops[k] != want {
			t.Errorf("ops %s: %+v, want %+v", k, r.Ops[k], want)
		}
	}
	if len(r.Ops) != len(wantOps) {
		t.Errorf("ops of %d kinds, want %d: %v", len(r.Ops), len(wantOps), r.Ops)
	}
	if r.Faults[history.FaultAgentSigkill] != 1 || r.Faults[history.FaultHostdKill9] != 1 || len(r.Faults) != 2 {
		t.Errorf("faults %v", r.Faults)
	}
	// f1: rig/a back 5s after; f2: rig/a after 5s, rig/b after 10s
	if r.Recovery[history.FaultAgentSigkill] != 5*time.Second || r.Recovery[history.FaultHostdKill9] != 10*time.Second {
		t.Errorf("recovery %v", r.Recovery)
	}

	// the order of the events does not matter
	shuffled := fixture.Clean()
	slices.Reverse(shuffled)
	if r2 := Check(shuffled, Options{}); !r2.OK() {
		t.Errorf("clean history reversed fails:\n%s", text(t, r2))
	}
}

func TestCheckMargins(t *testing.T) {
	evs := edit(is(history.KindSample, history.PhaseAfter, ""), func(e *history.Event) { e.Goroutines = 110; e.FDs = 55; e.RSS = 120 * fixture.MiB })(fixture.Clean())
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
	evs := fixture.With(
		history.Event{T: fixture.At(200.5), Kind: history.KindTyped, Phase: history.PhaseObserve, Agent: "rig/a", NudgeID: "h-1"},
		// overlaps the nudge (10..11) within FaultWindow
		history.Event{T: fixture.At(5), Kind: history.KindFault, Phase: history.PhaseStart, Op: "near", Fault: history.FaultTCPCut},
		history.Event{T: fixture.At(7), Kind: history.KindFault, Phase: history.PhaseEnd, Op: "near", Fault: history.FaultTCPCut, Bound: history.Duration(time.Minute)},
		// spans the nudge
		history.Event{T: fixture.At(1), Kind: history.KindFault, Phase: history.PhaseStart, Agent: "rig/a", Op: "long", Fault: history.FaultClockStep},
		// neither
		history.Event{T: fixture.At(17), Kind: history.KindFault, Phase: history.PhaseStart, Op: "later", Fault: history.FaultDiskFull},
		history.Event{T: fixture.At(18), Kind: history.KindFault, Phase: history.PhaseEnd, Op: "later", Fault: history.FaultDiskFull},
	)(fixture.Clean())
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

// TestSafety: the check made during a run reports what no later event can
// undo, and nothing that only the end can judge.
func TestSafety(t *testing.T) {
	// midRun is the clean history cut before the end's observations.
	midRun := without(func(e history.Event) bool { return e.T.After(fixture.At(199)) })
	tests := []struct {
		name   string
		change func([]history.Event) []history.Event
		want   string // in the one violation; "" for none
	}{
		{name: "clean, whole"},
		{name: "mid-run: nothing typed, ran or landed yet", change: midRun},
		{name: "nudge typed twice",
			change: fixture.With(history.Event{T: fixture.At(200.5), Kind: history.KindTyped, Phase: history.PhaseObserve, Agent: "rig/a", NudgeID: "h-1"}),
			want:   "nudge op n1 (h-1) typed 2 times"},
		{name: "nudge the client saw fail typed twice",
			change: fixture.With(
				history.Event{T: fixture.At(200.5), Kind: history.KindTyped, Phase: history.PhaseObserve, Agent: "rig/a", Op: "n3"},
				history.Event{T: fixture.At(200.6), Kind: history.KindTyped, Phase: history.PhaseObserve, Agent: "rig/a", Op: "n3"}),
			want: "nudge op n3 (client saw no acceptance) typed 2 times"},
		{name: "relay ran twice",
			change: fixture.With(history.Event{T: fixture.At(201.5), Kind: history.KindRan, Phase: history.PhaseObserve, Op: "r1"}),
			want:   "relay op r1 succeeded but ran 2 times"},
		{name: "indeterminate relay ran twice",
			change: fixture.With(history.Event{T: fixture.At(201.5), Kind: history.KindRan, Phase: history.PhaseObserve, Op: "r3"}, history.Event{T: fixture.At(201.6), Kind: history.KindRan, Phase: history.PhaseObserve, Op: "r3"}),
			want:   "relay op r3 (indeterminate) ran 2 times"},
		{name: "mid-run, a typed line whose acceptance is not written yet",
			change: then(midRun, fixture.With(history.Event{T: fixture.At(150), Kind: history.KindTyped, Phase: history.PhaseObserve, Agent: "rig/b", NudgeID: "h-99"}))},
		{name: "mid-run, a relay ran whose invoke is not written yet",
			change: then(midRun, fixture.With(history.Event{T: fixture.At(150), Kind: history.KindRan, Phase: history.PhaseObserve, Op: "r9"}))},
		{name: "mid-run, a nudge typed before the client's acceptance is written",
			change: then(midRun, without(is(history.KindNudge, history.PhaseOK, "n1")),
				fixture.With(history.Event{T: fixture.At(150), Kind: history.KindTyped, Phase: history.PhaseObserve, Agent: "rig/a", Op: "n1", NudgeID: "h-1"}))},
		{name: "mid-run, the same nudge typed twice before its acceptance is written",
			change: then(midRun, without(is(history.KindNudge, history.PhaseOK, "n1")),
				fixture.With(history.Event{T: fixture.At(150), Kind: history.KindTyped, Phase: history.PhaseObserve, Agent: "rig/a", Op: "n1", NudgeID: "h-1"},
					history.Event{T: fixture.At(151), Kind: history.KindTyped, Phase: history.PhaseObserve, Agent: "rig/a", Op: "n1", NudgeID: "h-1"})),
			want: "nudge op n1 (client saw no acceptance) typed 2 times"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			evs := fixture.Clean()
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
	if r := Check(midRun(fixture.Clean()), Options{}); r.OK() {
		t.Error("Check passes a history cut mid-run: it judges what Safety leaves to the end")
	}
}
