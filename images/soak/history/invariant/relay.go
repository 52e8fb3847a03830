package invariant

import (
	"fmt"

	"github.com/polecat-sidecar/sidecar/images/soak/history"
)

// relays checks InvRelay.
func (c *checker) relays() InvariantResult {
	res := InvariantResult{Name: InvRelay}
	ran := map[string][]history.Event{}
	for _, e := range c.observations(history.KindRan) {
		ran[e.Op] = append(ran[e.Op], e)
	}
	invoked := map[string]bool{}
	for _, o := range c.ops[history.KindRelay] {
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
	for _, e := range c.observations(history.KindRan) {
		if !invoked[e.Op] {
			res.Checked++
			res.Violations = append(res.Violations, c.violation(InvRelay,
				fmt.Sprintf("relay op %q ran but was never invoked", e.Op), e))
		}
	}
	return res
}
