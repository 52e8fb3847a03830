package command

import (
	"fmt"
	"io"
	"time"

	"github.com/polecat-sidecar/sidecar/hostd/api"
	"github.com/polecat-sidecar/sidecar/internal/termsafe"
)

// PrintForgotten says what hostd forgot of a polecat: hostd forget, and
// hostd nuke.
func PrintForgotten(out io.Writer, f api.Forgotten) {
	switch {
	case f.Nothing():
		fmt.Fprintf(out, "hostd kept nothing of %s\n", f.Polecat)
		return
	case f.Last != nil:
		fmt.Fprintf(out, "forgot %s (%s for %s: %s)\n", f.Polecat, f.Last.State, time.Since(f.Last.StateSince).Round(time.Second), termsafe.Line(f.Last.Reason))
	default:
		fmt.Fprintf(out, "forgot %s (not listed by status)\n", f.Polecat)
	}
	if f.Nudges > 0 {
		fmt.Fprintf(out, "  cancelled %d queued nudge(s)\n", f.Nudges)
	}
	for _, p := range f.Removed {
		fmt.Fprintf(out, "  removed %s\n", p)
	}
}
