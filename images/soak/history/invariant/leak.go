package invariant

import (
	"fmt"
	"slices"

	"github.com/polecat-sidecar/sidecar/images/soak/history"
)

// leaks checks InvLeak.
func (c *checker) leaks(m Margins) InvariantResult {
	res := InvariantResult{Name: InvLeak}
	var baseline []history.Event
	var after *history.Event
	for _, e := range c.byKind[history.KindSample] {
		switch e.Phase {
		case history.PhaseBaseline:
			baseline = append(baseline, e)
		case history.PhaseAfter:
			ev := e
			after = &ev
		}
	}
	disks := c.observations(history.KindDisk)
	switch {
	case len(baseline) == 0 && after == nil && len(disks) == 0:
		// reported as nothing to check
	case len(baseline) == 0:
		var evs []history.Event
		if after != nil {
			evs = append(evs, *after)
		}
		res.Violations = append(res.Violations, c.violation(InvLeak, "not measured: no baseline sample", evs...))
	case after == nil:
		res.Violations = append(res.Violations, c.violation(InvLeak, "not measured: no after sample", baseline...))
	default:
		res.Checked += 3
		g := median(baseline, func(e history.Event) float64 { return float64(e.Goroutines) })
		fd := median(baseline, func(e history.Event) float64 { return float64(e.FDs) })
		rss := median(baseline, func(e history.Event) float64 { return float64(e.RSS) })
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
func median(evs []history.Event, f func(history.Event) float64) float64 {
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
