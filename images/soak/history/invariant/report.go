package invariant

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/polecat-sidecar/sidecar/images/soak/history"
)

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
	Environment []history.Event
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
	Events []history.Event
	// Faults are the start and end events of the faults active within
	// FaultWindow of Events (of their non-observation events when there
	// are any, since end-of-run observations would take in every fault).
	Faults []history.Event
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

// plural is "s" unless n is 1.
func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
