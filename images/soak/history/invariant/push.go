package invariant

import (
	"cmp"
	"fmt"

	"github.com/polecat-sidecar/sidecar/images/soak/history"
)

// pushes checks InvPush.
func (c *checker) pushes() InvariantResult {
	res := InvariantResult{Name: InvPush}
	type lkey struct{ commit, where string }
	landed := map[lkey]bool{}
	for _, e := range c.observations(history.KindLanded) {
		landed[lkey{e.Commit, e.Where}] = true
	}
	reachable := c.observations(history.KindOriginReachable)
	for _, o := range c.ops[history.KindPush] {
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
		if !landed[lkey{commit, history.WhereRepo}] {
			res.Violations = append(res.Violations, c.violation(InvPush,
				fmt.Sprintf("push op %s acknowledged but commit %s not in hostd's repository", o.invoke.Op, commit), o.events()...))
		}
		if len(reachable) > 0 && !landed[lkey{commit, history.WhereOrigin}] {
			res.Violations = append(res.Violations, c.violation(InvPush,
				fmt.Sprintf("push op %s acknowledged but commit %s not in origin, which was reachable", o.invoke.Op, commit),
				append(o.events(), reachable[0])...))
		}
	}
	for _, e := range c.observations(history.KindFsck) {
		res.Checked++
		if !e.OK {
			res.Violations = append(res.Violations, c.violation(InvPush,
				fmt.Sprintf("git fsck of %s failed", cmp.Or(e.Where, "a repository")), e))
		}
	}
	return res
}
