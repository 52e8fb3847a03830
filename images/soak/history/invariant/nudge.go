package invariant

import (
	"fmt"

	"github.com/polecat-sidecar/sidecar/images/soak/history"
)

// nudges checks InvNudge.
func (c *checker) nudges() InvariantResult {
	res := InvariantResult{Name: InvNudge}
	type nkey struct{ agent, id string }
	accepted := map[nkey]*op{}
	byOp := map[string]*op{}
	for _, o := range c.ops[history.KindNudge] {
		if o.invoke.Op != "" {
			byOp[o.invoke.Op] = o
		}
		if o.ok() && o.end.NudgeID != "" {
			accepted[nkey{o.agent(), o.end.NudgeID}] = o
		}
	}
	// hostd's outcomes, by nudge id (and agent when the outcome names one)
	outcomes := map[nkey]history.Event{}
	for _, e := range c.byKind[history.KindNudge] {
		if e.Phase == history.PhaseOutcome {
			outcomes[nkey{e.Agent, e.NudgeID}] = e
		}
	}
	outcome := func(agent, id string) (history.Event, bool) {
		if e, ok := outcomes[nkey{agent, id}]; ok {
			return e, true
		}
		e, ok := outcomes[nkey{"", id}]
		return e, ok
	}
	typed := map[*op][]history.Event{}
	for _, e := range c.observations(history.KindTyped) {
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
	for _, o := range c.ops[history.KindNudge] {
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
		case out.Outcome == history.OutcomeDelivered:
			res.Violations = append(res.Violations, c.violation(InvNudge,
				fmt.Sprintf("nudge op %s (%s) reported delivered but never typed", o.invoke.Op, id), evs...))
		case out.Outcome != history.OutcomeExpired && out.Outcome != history.OutcomeFailed && out.Outcome != history.OutcomeCancelled:
			res.Violations = append(res.Violations, c.violation(InvNudge,
				fmt.Sprintf("nudge op %s (%s) never typed, unknown outcome %q", o.invoke.Op, id, out.Outcome), evs...))
		case out.Reason == "":
			res.Violations = append(res.Violations, c.violation(InvNudge,
				fmt.Sprintf("nudge op %s (%s) %s without a reason", o.invoke.Op, id, out.Outcome), evs...))
		}
	}
	return res
}
