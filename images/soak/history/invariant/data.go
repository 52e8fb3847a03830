package invariant

import (
	"fmt"
	"slices"

	"github.com/polecat-sidecar/sidecar/images/soak/history"
)

// data checks InvData.
func (c *checker) data() InvariantResult {
	res := InvariantResult{Name: InvData}
	// every line each file (or conflict copy) held at the end
	type fkey struct{ agent, side, path string }
	var final []history.Event
	observed := map[string]bool{}
	for _, e := range c.observations(history.KindFile) {
		final = append(final, e)
		observed[e.Agent] = true
	}
	var writes []*op
	for _, o := range c.ops[history.KindData] {
		writes = append(writes, o)
	}
	unobserved := map[string][]history.Event{}
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
		var seen []history.Event
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
		slices.SortStableFunc(seen, func(a, b history.Event) int { return a.T.Compare(b.T) })
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

// short is the first 12 characters of a hash.
func short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}
