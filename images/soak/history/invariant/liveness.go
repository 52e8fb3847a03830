package invariant

import (
	"fmt"
	"slices"
	"time"

	"github.com/polecat-sidecar/sidecar/images/soak/history"
)

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
			evs := []history.Event{*f.start, *f.end}
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
		var seen, up []history.Event
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
				append([]history.Event{*f.start}, seen...)...))
		}
	}
	return res
}

// measureFrom is when agent's recovery from f is measured from, and its
// bound: f's end or, while another fault on agent is active then, that
// fault's end (repeatedly), with the larger bound; one beginning after the
// bound, agent seen still down at it, changes nothing (docs/reliability.md).
// killed is the latest start among them of a fault that ends every tunnel
// (killsTunnel). ok is false when one of them never ends.
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
func doneAt(e *history.Event) time.Time {
	if e.Done.After(e.T) {
		return e.Done
	}
	return e.T
}

// killsTunnel says whether a fault of kind ends every tunnel of the
// agents it affects: they must connect anew to be back.
func killsTunnel(kind string) bool {
	return kind == history.FaultAgentSigkill || kind == history.FaultHostdKill9 || kind == history.FaultContainerRestart
}

// firstBack is agent's first status observation at or after from that
// shows it back on a tunnel that connected after killed (when hostd said
// when), and the last one before it that did not.
func (c *checker) firstBack(agent string, from, killed time.Time) (first, lastBefore *history.Event) {
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
func backSince(s history.Event, t time.Time) time.Time {
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
