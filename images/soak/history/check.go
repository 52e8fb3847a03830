package history

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"
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

// Report is what Check found.
type Report struct {
	// Invariants is one result per invariant, in the order of the Inv
	// constants.
	Invariants []InvariantResult
	// Ops counts the operations per Kind.
	Ops map[string]OpCount
	// Faults counts the faults started per fault kind.
	Faults map[string]int
	// Recovery is the worst recovery time measured per fault kind.
	Recovery map[string]time.Duration
	// Environment lists the faults whose undoing the machine failed (a
	// fault event with Err): undone another way (its end carries the
	// error, and Done), or not at all (PhaseFail, and no end: no recovery
	// of its agents after it begins is judged, nor its detection). A
	// failure of the machine, not of the product.
	Environment []Event
	// Seed is the run's seed.
	Seed int64
}

// InvariantResult is one invariant's verdict.
type InvariantResult struct {
	// Name is the invariant's name, one of the Inv constants.
	Name string
	// Checked is how many items the invariant looked at.
	Checked int
	// Violations are the ways the history broke the invariant.
	Violations []Violation
}

// OK reports whether the invariant held.
func (r InvariantResult) OK() bool { return len(r.Violations) == 0 }

// OpCount counts the operations of one kind by how they ended.
type OpCount struct {
	// Invoked is how many were started.
	Invoked int
	// OK is how many the client saw succeed.
	OK int
	// Failed is how many the client saw fail.
	Failed int
	// Indeterminate is how many have no outcome in the history.
	Indeterminate int
}

// Violation is one breach of an invariant.
type Violation struct {
	// Invariant is the name of the invariant broken.
	Invariant string
	// Message says what went wrong, naming the operation.
	Message string
	// Events are the events involved: the operation's, and the
	// observations that convict it.
	Events []Event
	// Faults are the start and end events of the faults active within
	// FaultWindow of Events (of their non-observation events when there
	// are any, since end-of-run observations would take in every fault).
	Faults []Event
	// settled: no later event can undo it (an operation done twice), so
	// Safety reports it while the run goes on.
	settled bool
}

// OK reports whether every invariant held.
func (r Report) OK() bool {
	for _, inv := range r.Invariants {
		if !inv.OK() {
			return false
		}
	}
	return true
}

// Invariant returns the result of the invariant named name, and whether
// the report has it.
func (r Report) Invariant(name string) (InvariantResult, bool) {
	for _, inv := range r.Invariants {
		if inv.Name == name {
			return inv, true
		}
	}
	return InvariantResult{}, false
}

// WriteText writes a summary of r for people (the seed, operations and
// faults per kind, each invariant's verdict, the worst recovery per fault
// kind), then every violation with its events and the faults around
// them, one event per line.
func (r Report) WriteText(w io.Writer) error {
	var b strings.Builder
	verdict := "PASS"
	if !r.OK() {
		verdict = "FAIL"
	}
	fmt.Fprintf(&b, "soak history: %s, seed %d\n", verdict, r.Seed)
	b.WriteString("operations:\n")
	for _, k := range slices.Sorted(maps.Keys(r.Ops)) {
		c := r.Ops[k]
		fmt.Fprintf(&b, "  %-8s invoked %d, ok %d, failed %d, indeterminate %d\n", k, c.Invoked, c.OK, c.Failed, c.Indeterminate)
	}
	b.WriteString("faults:\n")
	kinds := slices.Sorted(maps.Keys(r.Faults))
	for k := range r.Recovery {
		if _, ok := r.Faults[k]; !ok {
			kinds = append(kinds, k)
		}
	}
	for _, k := range kinds {
		fmt.Fprintf(&b, "  %-20s %d", k, r.Faults[k])
		if d, ok := r.Recovery[k]; ok {
			fmt.Fprintf(&b, ", worst recovery %s", d)
		}
		b.WriteString("\n")
	}
	if len(r.Environment) > 0 {
		b.WriteString("environment failures (not the product's):\n")
		for _, e := range r.Environment {
			fmt.Fprintf(&b, "  %s\n", e)
		}
	}
	b.WriteString("invariants:\n")
	for _, inv := range r.Invariants {
		v := "PASS"
		if !inv.OK() {
			v = fmt.Sprintf("FAIL (%d violation%s)", len(inv.Violations), plural(len(inv.Violations)))
		}
		fmt.Fprintf(&b, "  %-22s checked %-6d %s\n", inv.Name, inv.Checked, v)
	}
	for _, inv := range r.Invariants {
		for _, v := range inv.Violations {
			fmt.Fprintf(&b, "\nVIOLATION %s: %s\n", v.Invariant, v.Message)
			for _, e := range v.Events {
				fmt.Fprintf(&b, "    %s\n", e)
			}
			if len(v.Faults) > 0 {
				b.WriteString("  faults around:\n")
				for _, e := range v.Faults {
					fmt.Fprintf(&b, "    %s\n", e)
				}
			}
		}
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("writing report: %w", err)
	}
	return nil
}

// op is one operation: its invoke and, when the client saw one, its
// outcome (ok or fail).
type op struct {
	invoke Event
	end    *Event
}

// ok reports whether the client saw op succeed.
func (o *op) ok() bool { return o.end != nil && o.end.Phase == PhaseOK }

// agent is the operation's agent, from its invoke or else its outcome.
func (o *op) agent() string {
	if o.invoke.Agent == "" && o.end != nil {
		return o.end.Agent
	}
	return o.invoke.Agent
}

// events is the operation's events.
func (o *op) events() []Event {
	if o.end == nil {
		return []Event{o.invoke}
	}
	return []Event{o.invoke, *o.end}
}

// fault is one fault: its start and end events, either possibly missing.
type fault struct {
	id         string
	kind       string
	agent      string
	start, end *Event
	bound      time.Duration
	detect     time.Duration
}

// affects reports whether f touches agent.
func (f *fault) affects(agent string) bool { return f.agent == "" || f.agent == agent }

// checker holds the indexed history while Check runs.
type checker struct {
	events   []Event
	ops      map[string][]*op // per kind, in invoke order
	faults   []*fault         // in start order
	byKind   map[string][]Event
	statuses map[string][]Event // per agent, by T
	lastT    time.Time          // of the last status observation
	report   Report
}

// Check asserts the invariants over events (in any order: Check sorts a
// copy by T, keeping the file's order for equal times) and counts what
// the run did.
func Check(events []Event, opts Options) Report {
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
func Safety(events []Event) []Violation {
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
func newChecker(events []Event) *checker {
	c := &checker{
		events:   slices.Clone(events),
		ops:      map[string][]*op{},
		byKind:   map[string][]Event{},
		statuses: map[string][]Event{},
		report: Report{
			Ops:      map[string]OpCount{},
			Faults:   map[string]int{},
			Recovery: map[string]time.Duration{},
		},
	}
	slices.SortStableFunc(c.events, func(a, b Event) int { return a.T.Compare(b.T) })

	type key struct{ kind, id string }
	opIndex := map[key]*op{}
	faultIndex := map[string]*fault{}
	for _, e := range c.events {
		switch {
		case e.Kind == KindFault:
			f := faultIndex[e.Op]
			if f == nil || e.Op == "" {
				f = &fault{id: e.Op, kind: e.Fault, agent: e.Agent}
				faultIndex[e.Op] = f
				c.faults = append(c.faults, f)
			}
			ev := e
			switch e.Phase {
			case PhaseStart:
				if f.start == nil {
					f.start = &ev
					c.report.Faults[e.Fault]++
				}
			case PhaseEnd:
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
			if e.Bound != 0 && (f.bound == 0 || e.Phase == PhaseEnd) {
				f.bound = time.Duration(e.Bound)
			}
			if e.Detect != 0 && e.Phase == PhaseStart {
				f.detect = time.Duration(e.Detect)
			}
		case e.Phase == PhaseInvoke:
			k := key{e.Kind, e.Op}
			if opIndex[k] != nil && e.Op != "" {
				continue // a repeated invoke: the first one counts
			}
			o := &op{invoke: e}
			opIndex[k] = o
			c.ops[e.Kind] = append(c.ops[e.Kind], o)
		case e.Phase == PhaseOK || e.Phase == PhaseFail:
			if o := opIndex[key{e.Kind, e.Op}]; o != nil && o.end == nil {
				ev := e
				o.end = &ev
			}
		case e.Kind == KindRun && e.Phase == PhaseStart:
			c.report.Seed = e.Seed
		}
		if e.Kind == KindStatus && e.Phase == PhaseObserve {
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
func (c *checker) observations(kind string) []Event {
	var out []Event
	for _, e := range c.byKind[kind] {
		if e.Phase == PhaseObserve {
			out = append(out, e)
		}
	}
	return out
}

// violation builds a violation of inv over evs, with the faults around
// them.
func (c *checker) violation(inv, msg string, evs ...Event) Violation {
	v := Violation{Invariant: inv, Message: msg, Events: evs}
	var window []Event
	for _, e := range evs {
		if e.Phase != PhaseObserve && !e.T.IsZero() {
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

// nudges checks InvNudge.
func (c *checker) nudges() InvariantResult {
	res := InvariantResult{Name: InvNudge}
	type nkey struct{ agent, id string }
	accepted := map[nkey]*op{}
	byOp := map[string]*op{}
	for _, o := range c.ops[KindNudge] {
		if o.invoke.Op != "" {
			byOp[o.invoke.Op] = o
		}
		if o.ok() && o.end.NudgeID != "" {
			accepted[nkey{o.agent(), o.end.NudgeID}] = o
		}
	}
	// hostd's outcomes, by nudge id (and agent when the outcome names one)
	outcomes := map[nkey]Event{}
	for _, e := range c.byKind[KindNudge] {
		if e.Phase == PhaseOutcome {
			outcomes[nkey{e.Agent, e.NudgeID}] = e
		}
	}
	outcome := func(agent, id string) (Event, bool) {
		if e, ok := outcomes[nkey{agent, id}]; ok {
			return e, true
		}
		e, ok := outcomes[nkey{"", id}]
		return e, ok
	}
	typed := map[*op][]Event{}
	for _, e := range c.observations(KindTyped) {
		if o := accepted[nkey{e.Agent, e.NudgeID}]; o != nil && e.NudgeID != "" {
			typed[o] = append(typed[o], e)
			continue
		}
		if o := byOp[e.Op]; o != nil && e.Op != "" && o.agent() == e.Agent && (e.NudgeID == "" || !o.ok()) {
			typed[o] = append(typed[o], e)
			continue
		}
		res.Checked++
		res.Violations = append(res.Violations, c.violation(InvNudge,
			fmt.Sprintf("nudge %q typed into %s's pane but never accepted for it", e.NudgeID, e.Agent), e))
	}
	for _, o := range c.ops[KindNudge] {
		n := len(typed[o])
		evs := append(o.events(), typed[o]...)
		if !o.ok() {
			if n > 1 {
				res.Checked++
				res.Violations = append(res.Violations, settled(c.violation(InvNudge,
					fmt.Sprintf("nudge op %s (client saw no acceptance) typed %d times", o.invoke.Op, n), evs...)))
			} else if n == 1 {
				res.Checked++
			}
			continue
		}
		res.Checked++
		id := o.end.NudgeID
		if id == "" {
			res.Violations = append(res.Violations, c.violation(InvNudge,
				fmt.Sprintf("nudge op %s accepted without a nudge id", o.invoke.Op), evs...))
			continue
		}
		out, hasOutcome := outcome(o.agent(), id)
		if hasOutcome {
			evs = append(evs, out)
		}
		switch {
		case n == 1:
		case n > 1:
			res.Violations = append(res.Violations, settled(c.violation(InvNudge,
				fmt.Sprintf("nudge op %s (%s) typed %d times", o.invoke.Op, id, n), evs...)))
		case !hasOutcome:
			res.Violations = append(res.Violations, c.violation(InvNudge,
				fmt.Sprintf("nudge op %s (%s) silently lost: accepted, never typed, no outcome", o.invoke.Op, id), evs...))
		case out.Outcome == OutcomeDelivered:
			res.Violations = append(res.Violations, c.violation(InvNudge,
				fmt.Sprintf("nudge op %s (%s) reported delivered but never typed", o.invoke.Op, id), evs...))
		case out.Outcome != OutcomeExpired && out.Outcome != OutcomeFailed && out.Outcome != OutcomeCancelled:
			res.Violations = append(res.Violations, c.violation(InvNudge,
				fmt.Sprintf("nudge op %s (%s) never typed, unknown outcome %q", o.invoke.Op, id, out.Outcome), evs...))
		case out.Reason == "":
			res.Violations = append(res.Violations, c.violation(InvNudge,
				fmt.Sprintf("nudge op %s (%s) %s without a reason", o.invoke.Op, id, out.Outcome), evs...))
		}
	}
	return res
}

// pushes checks InvPush.
func (c *checker) pushes() InvariantResult {
	res := InvariantResult{Name: InvPush}
	type lkey struct{ commit, where string }
	landed := map[lkey]bool{}
	for _, e := range c.observations(KindLanded) {
		landed[lkey{e.Commit, e.Where}] = true
	}
	reachable := c.observations(KindOriginReachable)
	for _, o := range c.ops[KindPush] {
		if !o.ok() {
			continue
		}
		res.Checked++
		commit := cmp.Or(o.invoke.Commit, o.end.Commit)
		if commit == "" {
			res.Violations = append(res.Violations, c.violation(InvPush,
				fmt.Sprintf("push op %s acknowledged without a commit", o.invoke.Op), o.events()...))
			continue
		}
		if !landed[lkey{commit, WhereRepo}] {
			res.Violations = append(res.Violations, c.violation(InvPush,
				fmt.Sprintf("push op %s acknowledged but commit %s not in hostd's repository", o.invoke.Op, commit), o.events()...))
		}
		if len(reachable) > 0 && !landed[lkey{commit, WhereOrigin}] {
			res.Violations = append(res.Violations, c.violation(InvPush,
				fmt.Sprintf("push op %s acknowledged but commit %s not in origin, which was reachable", o.invoke.Op, commit),
				append(o.events(), reachable[0])...))
		}
	}
	for _, e := range c.observations(KindFsck) {
		res.Checked++
		if !e.OK {
			res.Violations = append(res.Violations, c.violation(InvPush,
				fmt.Sprintf("git fsck of %s failed", cmp.Or(e.Where, "a repository")), e))
		}
	}
	return res
}

// data checks InvData.
func (c *checker) data() InvariantResult {
	res := InvariantResult{Name: InvData}
	// every line each file (or conflict copy) held at the end
	type fkey struct{ agent, side, path string }
	var final []Event
	observed := map[string]bool{}
	for _, e := range c.observations(KindFile) {
		final = append(final, e)
		observed[e.Agent] = true
	}
	var writes []*op
	for _, o := range c.ops[KindData] {
		writes = append(writes, o)
	}
	unobserved := map[string][]Event{}
	var unobservedOrder []string
	for _, o := range writes {
		k := fkey{o.agent(), o.invoke.Side, o.invoke.Path}
		if o.invoke.Hash == "" || (o.end != nil && !o.ok()) {
			continue // a deletion: nothing to keep
		}
		res.Checked++
		if !observed[k.agent] {
			if _, ok := unobserved[k.agent]; !ok {
				unobservedOrder = append(unobservedOrder, k.agent)
			}
			unobserved[k.agent] = append(unobserved[k.agent], o.events()...)
			continue
		}
		var seen []Event
		found := false
		for _, f := range final {
			if f.Agent != k.agent || (f.Path != k.path && f.Of != k.path) {
				continue
			}
			seen = append(seen, f)
			if f.Hash == o.invoke.Hash {
				found = true
			}
		}
		if found {
			continue
		}
		slices.SortStableFunc(seen, func(a, b Event) int { return a.T.Compare(b.T) })
		res.Violations = append(res.Violations, c.violation(InvData,
			fmt.Sprintf("data op %s: %s's %s write of %s (%s) lost: neither the file nor a conflict copy holds it",
				o.invoke.Op, k.agent, k.side, k.path, short(o.invoke.Hash)),
			append(o.events(), seen...)...))
	}
	for _, a := range unobservedOrder {
		res.Violations = append(res.Violations, c.violation(InvData,
			fmt.Sprintf("agent %s: no final observation of its data files", a), unobserved[a]...))
	}
	return res
}

// plural is "s" unless n is 1.
func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// short is the first 12 characters of a hash.
func short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

// relays checks InvRelay.
func (c *checker) relays() InvariantResult {
	res := InvariantResult{Name: InvRelay}
	ran := map[string][]Event{}
	for _, e := range c.observations(KindRan) {
		ran[e.Op] = append(ran[e.Op], e)
	}
	invoked := map[string]bool{}
	for _, o := range c.ops[KindRelay] {
		invoked[o.invoke.Op] = true
		res.Checked++
		runs := ran[o.invoke.Op]
		evs := append(o.events(), runs...)
		switch {
		case o.ok() && len(runs) != 1:
			v := c.violation(InvRelay, fmt.Sprintf("relay op %s succeeded but ran %d times", o.invoke.Op, len(runs)), evs...)
			if len(runs) > 1 {
				v = settled(v)
			}
			res.Violations = append(res.Violations, v)
		case !o.ok() && len(runs) > 1:
			how := "failed"
			if o.end == nil {
				how = "indeterminate"
			}
			res.Violations = append(res.Violations, settled(c.violation(InvRelay,
				fmt.Sprintf("relay op %s (%s) ran %d times", o.invoke.Op, how, len(runs)), evs...)))
		}
	}
	for _, e := range c.observations(KindRan) {
		if !invoked[e.Op] {
			res.Checked++
			res.Violations = append(res.Violations, c.violation(InvRelay,
				fmt.Sprintf("relay op %q ran but was never invoked", e.Op), e))
		}
	}
	return res
}

// back reports whether a status observation's state counts as back.
func back(state string) bool { return state != "" && state != "disconnected" }

// recovery checks InvRecovery.
func (c *checker) recovery() InvariantResult {
	res := InvariantResult{Name: InvRecovery}
	for _, f := range c.faults {
		if f.start == nil || f.end == nil || f.bound <= 0 {
			continue
		}
		var agents []string
		if f.agent != "" {
			agents = []string{f.agent}
		} else {
			for a, st := range c.statuses {
				if a != "" && st[0].T.Before(f.start.T) {
					agents = append(agents, a)
				}
			}
			slices.Sort(agents)
		}
		for _, a := range agents {
			from, bound, killed, ok := c.measureFrom(f, a)
			if !ok {
				continue // another fault on a is never lifted
			}
			first, lastBefore := c.firstBack(a, from, killed)
			evs := []Event{*f.start, *f.end}
			if lastBefore != nil {
				evs = append(evs, *lastBefore)
			}
			if first == nil {
				if c.lastT.Before(from.Add(bound)) {
					continue // the run stopped watching before the bound
				}
				res.Checked++
				res.Violations = append(res.Violations, c.violation(InvRecovery,
					fmt.Sprintf("fault %s (%s): %s not back within %s of %s", f.id, f.kind, a, bound, from.Format("15:04:05.000")), evs...))
				continue
			}
			res.Checked++
			took := backSince(*first, from).Sub(from)
			if worst, ok := c.report.Recovery[f.kind]; !ok || took > worst {
				c.report.Recovery[f.kind] = took
			}
			if took > bound {
				res.Violations = append(res.Violations, c.violation(InvRecovery,
					fmt.Sprintf("fault %s (%s): %s back after %s, bound %s", f.id, f.kind, a, took, bound), append(evs, *first)...))
			}
		}
	}
	return res
}

// detection checks InvDetect: for each fault on one agent with a Detect
// bound that lasted longer than it, every status observation from
// start+Detect until the fault's end shows the agent down. A fault with
// no observation in that span (hostd was down, the sampler fell behind on
// a loaded machine) is not judged.
func (c *checker) detection() InvariantResult {
	res := InvariantResult{Name: InvDetect}
	for _, f := range c.faults {
		if f.start == nil || f.end == nil || f.detect <= 0 || f.agent == "" || f.end.T.Sub(doneAt(f.start)) <= f.detect {
			continue
		}
		// From when the fault was in place: an injection (a docker call)
		// can take seconds on a loaded machine.
		from := doneAt(f.start).Add(f.detect)
		var seen, up []Event
		for _, s := range c.statuses[f.agent] {
			// Only what hostd showed between the bound and the fault's
			// end: asked for after one, answered before the other.
			if s.T.Before(from) || s.T.After(f.end.T) || s.Answered.After(f.end.T) {
				continue
			}
			seen = append(seen, s)
			if back(s.State) {
				up = append(up, s)
			}
		}
		if len(seen) == 0 {
			continue
		}
		res.Checked++
		if len(up) > 0 {
			res.Violations = append(res.Violations, c.violation(InvDetect,
				fmt.Sprintf("fault %s (%s): hostd status showed %s up (%s) %s after the fault began", f.id, f.kind, f.agent,
					up[0].State, up[0].T.Sub(f.start.T).Round(time.Millisecond)),
				append([]Event{*f.start}, seen...)...))
		}
	}
	return res
}

// measureFrom is when agent's recovery from f is measured from, and the
// bound it gets: f's end, or, while another fault on agent is active
// then, that fault's end (repeatedly), with the larger bound. killed is
// the latest start of those faults that end every tunnel of the agent
// (killsTunnel): a tunnel that connected before it is a dead one hostd
// has not noticed yet. ok is false when one of those faults never ends. A
// fault that begins after the bound has passed, with agent observed still
// down at the bound, changes nothing: the verdict was in by then.
func (c *checker) measureFrom(f *fault, agent string) (from time.Time, bound time.Duration, killed time.Time, ok bool) {
	from, bound = doneAt(f.end), f.bound
	if killsTunnel(f.kind) {
		killed = f.start.T
	}
	for changed := true; changed; {
		changed = false
		// Until agent is seen back, a fault that begins meanwhile (hostd
		// killed again, say, which also stops every status observation)
		// restarts the clock at its end, as one already active does.
		seenBack := c.backAt(agent, from, killed)
		for _, g := range c.faults {
			if g == f || g.start == nil || !g.affects(agent) || g.start.T.After(seenBack) {
				continue
			}
			if due := from.Add(bound); g.start.T.After(due) && c.observed(agent, due, g.start.T) {
				continue
			}
			if g.end == nil {
				return from, bound, killed, false
			}
			if end := doneAt(g.end); end.After(from) {
				from, bound, changed = end, max(bound, g.bound), true
				if killsTunnel(g.kind) {
					killed = later(killed, g.start.T)
				}
			}
		}
	}
	return from, bound, killed, true
}

// observed reports whether hostd status was seen answering about agent
// between lo and hi.
func (c *checker) observed(agent string, lo, hi time.Time) bool {
	for _, s := range c.statuses[agent] {
		if !s.T.Before(lo) && !s.T.After(hi) {
			return true
		}
	}
	return false
}

// doneAt is when what a fault's event e records was done: on its start,
// when the injection returned (Done), T being when it began; on its end,
// when its undoing began (T), or, when the machine failed that and the
// harness got past it another way, when that was done (Done).
func doneAt(e *Event) time.Time {
	if e.Done.After(e.T) {
		return e.Done
	}
	return e.T
}

// killsTunnel says whether a fault of kind ends every tunnel of the
// agents it affects: they must connect anew to be back.
func killsTunnel(kind string) bool {
	return kind == FaultAgentSigkill || kind == FaultHostdKill9 || kind == FaultContainerRestart
}

// firstBack is agent's first status observation at or after from that
// shows it back on a tunnel that connected after killed (when hostd said
// when), and the last one before it that did not.
func (c *checker) firstBack(agent string, from, killed time.Time) (first, lastBefore *Event) {
	for i, s := range c.statuses[agent] {
		if s.T.Before(from) {
			continue
		}
		if back(s.State) && (s.Since.IsZero() || !s.Since.Before(killed)) {
			return &c.statuses[agent][i], lastBefore
		}
		lastBefore = &c.statuses[agent][i]
	}
	return nil, lastBefore
}

// backAt is when agent is first known back at or after t, on a tunnel
// that connected after killed; the end of the history when never.
func (c *checker) backAt(agent string, t, killed time.Time) time.Time {
	if first, _ := c.firstBack(agent, t, killed); first != nil {
		return backSince(*first, t)
	}
	return c.lastT
}

// backSince is when an agent that observation s (at or after t) shows
// back came back: when its tunnel connected, as hostd reported it, but not
// before t (a tunnel that outlived a fault that leaves tunnels be was
// back when the fault ended); the observation's time when hostd reported
// none.
func backSince(s Event, t time.Time) time.Time {
	if s.Since.IsZero() {
		return s.T
	}
	return later(s.Since, t)
}

// later is the later of a and b.
func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// leaks checks InvLeak.
func (c *checker) leaks(m Margins) InvariantResult {
	res := InvariantResult{Name: InvLeak}
	var baseline []Event
	var after *Event
	for _, e := range c.byKind[KindSample] {
		switch e.Phase {
		case PhaseBaseline:
			baseline = append(baseline, e)
		case PhaseAfter:
			ev := e
			after = &ev
		}
	}
	disks := c.observations(KindDisk)
	switch {
	case len(baseline) == 0 && after == nil && len(disks) == 0:
		// reported as nothing to check
	case len(baseline) == 0:
		var evs []Event
		if after != nil {
			evs = append(evs, *after)
		}
		res.Violations = append(res.Violations, c.violation(InvLeak, "not measured: no baseline sample", evs...))
	case after == nil:
		res.Violations = append(res.Violations, c.violation(InvLeak, "not measured: no after sample", baseline...))
	default:
		res.Checked += 3
		g := median(baseline, func(e Event) float64 { return float64(e.Goroutines) })
		fd := median(baseline, func(e Event) float64 { return float64(e.FDs) })
		rss := median(baseline, func(e Event) float64 { return float64(e.RSS) })
		if float64(after.Goroutines) > g+float64(m.Goroutines) {
			res.Violations = append(res.Violations, c.violation(InvLeak,
				fmt.Sprintf("goroutines: %d after, baseline median %g, margin %d", after.Goroutines, g, m.Goroutines), *after))
		}
		if float64(after.FDs) > fd+float64(m.FDs) {
			res.Violations = append(res.Violations, c.violation(InvLeak,
				fmt.Sprintf("fds: %d after, baseline median %g, margin %d", after.FDs, fd, m.FDs), *after))
		}
		if float64(after.RSS) > rss*(1+m.RSS) {
			res.Violations = append(res.Violations, c.violation(InvLeak,
				fmt.Sprintf("rss: %.1f MiB after, baseline median %.1f MiB, margin %g%%",
					float64(after.RSS)/(1<<20), rss/(1<<20), m.RSS*100), *after))
		}
	}
	for _, e := range disks {
		res.Checked++
		if e.Bytes > e.Budget {
			res.Violations = append(res.Violations, c.violation(InvLeak,
				fmt.Sprintf("disk: %d bytes used, over the budget of %d", e.Bytes, e.Budget), e))
		}
	}
	return res
}

// median is the median of f over evs (not empty).
func median(evs []Event, f func(Event) float64) float64 {
	v := make([]float64, len(evs))
	for i, e := range evs {
		v[i] = f(e)
	}
	slices.Sort(v)
	n := len(v)
	if n%2 == 1 {
		return v[n/2]
	}
	return (v[n/2-1] + v[n/2]) / 2
}
