// Package invariant judges a soak run by its history
// (images/soak/history): Check asserts the run's invariants over the
// events, Jepsen-style (an operation whose outcome the driver never saw is
// indeterminate, never a violation by itself), and Safety checks, while
// the run goes on, what no later event can undo. docs/reliability.md
// lists the invariants.
package invariant

import (
	"slices"
	"time"

	"github.com/polecat-sidecar/sidecar/images/soak/history"
)

// The invariants Check asserts, in the order of Report.Invariants.
const (
	// InvNudge: every accepted nudge is typed exactly once, or hostd said
	// why it was not (expired, failed, cancelled with a reason) and it was
	// never typed.
	InvNudge = "nudge exactly once"
	// InvPush: every acknowledged push landed in hostd's repository, and
	// in origin once origin was reachable; every fsck passed.
	InvPush = "push durable"
	// InvData: every data write survives. A write appends one line (its
	// Hash) to a file, and the end observes every line of every file, one
	// KindFile event each, so each write's line must be in its file or in
	// a conflict copy of it, on either side. A write the client saw fail
	// (a full disk) wrote nothing; one with no outcome may have, so it is
	// checked. A write with no Hash is a deletion and has nothing to keep.
	InvData = "data not lost"
	// InvRelay: every acknowledged relay ran exactly once, every other at
	// most once.
	InvRelay = "relay exactly once"
	// InvRecovery: every agent a fault affected was back within the
	// fault's bound after it ended.
	InvRecovery = "recovery within bound"
	// InvDetect: while a fault that takes an agent down (Detect set on its
	// start) lasts, hostd status shows that agent down from Detect after
	// the start on: status is truthful about liveness.
	InvDetect = "down shown within bound"
	// InvLeak: hostd's goroutines, FDs and RSS after the run are within a
	// margin of the baseline, and disk use within its budget.
	InvLeak = "no leak"
)

// invariants is every invariant's name, in Report order.
var invariants = []string{InvNudge, InvPush, InvData, InvRelay, InvRecovery, InvDetect, InvLeak}

// FaultWindow is how far before the first and after the last event of a
// violation Check looks for faults to name beside it.
const FaultWindow = 5 * time.Second

// Margins are how much hostd's resources may grow from the baseline to
// the after sample.
type Margins struct {
	// Goroutines is how many more goroutines are allowed; 0 means 20.
	Goroutines int
	// FDs is how many more open file descriptors are allowed; 0 means 20.
	FDs int
	// RSS is the fraction by which the RSS may grow (0.25 is 25%); 0
	// means 0.30.
	RSS float64
}

// Options tune Check.
type Options struct {
	// Margin is the allowed resource growth for the "no leak" invariant.
	Margin Margins
}

// op is one operation: its invoke and, when the client saw one, its
// outcome (ok or fail).
type op struct {
	invoke history.Event
	end    *history.Event
}

// ok reports whether the client saw op succeed.
func (o *op) ok() bool { return o.end != nil && o.end.Phase == history.PhaseOK }

// agent is the operation's agent, from its invoke or else its outcome.
func (o *op) agent() string {
	if o.invoke.Agent == "" && o.end != nil {
		return o.end.Agent
	}
	return o.invoke.Agent
}

// events is the operation's events.
func (o *op) events() []history.Event {
	if o.end == nil {
		return []history.Event{o.invoke}
	}
	return []history.Event{o.invoke, *o.end}
}

// fault is one fault: its start and end events, either possibly missing.
type fault struct {
	id         string
	kind       string
	agent      string
	start, end *history.Event
	bound      time.Duration
	detect     time.Duration
}

// affects reports whether f touches agent.
func (f *fault) affects(agent string) bool { return f.agent == "" || f.agent == agent }

// checker holds the indexed history while Check runs.
type checker struct {
	events   []history.Event
	ops      map[string][]*op // per kind, in invoke order
	faults   []*fault         // in start order
	byKind   map[string][]history.Event
	statuses map[string][]history.Event // per agent, by T
	lastT    time.Time                  // of the last status observation
	report   Report
}

// Check asserts the invariants over events (in any order: Check sorts a
// copy by T, keeping the file's order for equal times) and counts what
// the run did.
func Check(events []history.Event, opts Options) Report {
	m := opts.Margin
	if m.Goroutines == 0 {
		m.Goroutines = 20
	}
	if m.FDs == 0 {
		m.FDs = 20
	}
	if m.RSS == 0 {
		m.RSS = 0.30
	}
	c := newChecker(events)
	c.report.Invariants = []InvariantResult{
		c.nudges(),
		c.pushes(),
		c.data(),
		c.relays(),
		c.recovery(),
		c.detection(),
		c.leaks(m),
	}
	for i := range c.report.Invariants {
		inv := &c.report.Invariants[i]
		if inv.Checked == 0 && inv.Name != InvData && inv.Name != InvRecovery && inv.Name != InvDetect && len(inv.Violations) == 0 {
			inv.Violations = append(inv.Violations, Violation{Invariant: inv.Name, Message: "nothing to check"})
		}
	}
	return c.report
}

// Safety is the cheap check a run makes while it goes on, over the
// history so far and what has been observed so far: the violations no
// later event can undo, a nudge typed twice or a relayed command run
// twice. Everything else (a nudge not typed yet, a push not yet in
// origin, an agent not back yet) only the end can judge.
func Safety(events []history.Event) []Violation {
	c := newChecker(events)
	var out []Violation
	for _, v := range slices.Concat(c.nudges().Violations, c.relays().Violations) {
		if v.settled {
			out = append(out, v)
		}
	}
	return out
}

// settled marks v as one no later event can undo (see Safety).
func settled(v Violation) Violation {
	v.settled = true
	return v
}

// newChecker indexes events.
func newChecker(events []history.Event) *checker {
	c := &checker{
		events:   slices.Clone(events),
		ops:      map[string][]*op{},
		byKind:   map[string][]history.Event{},
		statuses: map[string][]history.Event{},
		report: Report{
			Ops:      map[string]OpCount{},
			Faults:   map[string]int{},
			Recovery: map[string]time.Duration{},
		},
	}
	slices.SortStableFunc(c.events, func(a, b history.Event) int { return a.T.Compare(b.T) })

	type key struct{ kind, id string }
	opIndex := map[key]*op{}
	faultIndex := map[string]*fault{}
	for _, e := range c.events {
		switch {
		case e.Kind == history.KindFault:
			f := faultIndex[e.Op]
			if f == nil || e.Op == "" {
				f = &fault{id: e.Op, kind: e.Fault, agent: e.Agent}
				faultIndex[e.Op] = f
				c.faults = append(c.faults, f)
			}
			ev := e
			switch e.Phase {
			case history.PhaseStart:
				if f.start == nil {
					f.start = &ev
					c.report.Faults[e.Fault]++
				}
			case history.PhaseEnd:
				if f.end == nil {
					f.end = &ev
				}
			}
			if e.Err != "" {
				c.report.Environment = append(c.report.Environment, ev)
			}
			if f.kind == "" {
				f.kind = e.Fault
			}
			if e.Bound != 0 && (f.bound == 0 || e.Phase == history.PhaseEnd) {
				f.bound = time.Duration(e.Bound)
			}
			if e.Detect != 0 && e.Phase == history.PhaseStart {
				f.detect = time.Duration(e.Detect)
			}
		case e.Phase == history.PhaseInvoke:
			k := key{e.Kind, e.Op}
			if opIndex[k] != nil && e.Op != "" {
				continue // a repeated invoke: the first one counts
			}
			o := &op{invoke: e}
			opIndex[k] = o
			c.ops[e.Kind] = append(c.ops[e.Kind], o)
		case e.Phase == history.PhaseOK || e.Phase == history.PhaseFail:
			if o := opIndex[key{e.Kind, e.Op}]; o != nil && o.end == nil {
				ev := e
				o.end = &ev
			}
		case e.Kind == history.KindRun && e.Phase == history.PhaseStart:
			c.report.Seed = e.Seed
		}
		if e.Kind == history.KindStatus && e.Phase == history.PhaseObserve {
			c.statuses[e.Agent] = append(c.statuses[e.Agent], e)
			c.lastT = e.T
		}
		c.byKind[e.Kind] = append(c.byKind[e.Kind], e)
	}
	for kind, ops := range c.ops {
		var n OpCount
		for _, o := range ops {
			n.Invoked++
			switch {
			case o.end == nil:
				n.Indeterminate++
			case o.ok():
				n.OK++
			default:
				n.Failed++
			}
		}
		c.report.Ops[kind] = n
	}
	return c
}

// observations returns the observe events of kind, by T.
func (c *checker) observations(kind string) []history.Event {
	var out []history.Event
	for _, e := range c.byKind[kind] {
		if e.Phase == history.PhaseObserve {
			out = append(out, e)
		}
	}
	return out
}

// violation builds a violation of inv over evs, with the faults around
// them.
func (c *checker) violation(inv, msg string, evs ...history.Event) Violation {
	v := Violation{Invariant: inv, Message: msg, Events: evs}
	var window []history.Event
	for _, e := range evs {
		if e.Phase != history.PhaseObserve && !e.T.IsZero() {
			window = append(window, e)
		}
	}
	if len(window) == 0 {
		for _, e := range evs {
			if !e.T.IsZero() {
				window = append(window, e)
			}
		}
	}
	if len(window) == 0 {
		return v
	}
	lo, hi := window[0].T, window[0].T
	for _, e := range window[1:] {
		if e.T.Before(lo) {
			lo = e.T
		}
		if e.T.After(hi) {
			hi = e.T
		}
	}
	lo, hi = lo.Add(-FaultWindow), hi.Add(FaultWindow)
	for _, f := range c.faults {
		if f.start != nil && f.start.T.After(hi) {
			continue
		}
		if f.end != nil && f.end.T.Before(lo) {
			continue
		}
		if f.start != nil {
			v.Faults = append(v.Faults, *f.start)
		}
		if f.end != nil {
			v.Faults = append(v.Faults, *f.end)
		}
	}
	return v
}
