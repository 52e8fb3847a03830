package render

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/polecat-sidecar/sidecar/hostd/api"
	"github.com/polecat-sidecar/sidecar/internal/termsafe"
)

// SyncStatus prints the policy, each polecat's data root and its rig's,
// and the links there that lead out of it.
func SyncStatus(w io.Writer, st api.SyncStatus) error {
	fmt.Fprintf(w, "crosses: %v\ngoes in from the rig's root, read-only: %v (hook commands naming the host's gt or bd made bare)\n"+
		"never crosses: the built-in secrets blacklist", st.Include, st.RigInclude)
	if len(st.Exclude) > 0 {
		fmt.Fprintf(w, " and %v", st.Exclude)
	}
	fmt.Fprintln(w, "\nin the container: each agent's --data-root (default its --work-dir)")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "POLECAT\tSTORED (of %d)\tHOST DATA ROOT\tRIG ROOT\n", st.MaxStoredBytes)
	for _, r := range st.Roots {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", r.Polecat, r.StoredBytes, r.Host, r.Rig)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, r := range st.Roots {
		for _, l := range r.EscapingLinks {
			fmt.Fprintf(w, "warning: %s: %s; it is never sent into the container: mend or remove it\n", r.Polecat, termsafe.Line(l))
		}
	}
	return nil
}

// SyncLog prints the transfers as a table.
func SyncLog(w io.Writer, recs []api.SyncRecord) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TIME\tPOLECAT\tOP\tFILES\tAPPLIED\tMERGED\tCONFLICTED\tDELETED\tRESULT")
	for _, r := range recs {
		op := r.Op
		if r.Reason != "" {
			op += " (" + r.Reason + ")"
		}
		if r.DryRun {
			op += " dry run"
		}
		result := "ok"
		if r.Error != "" {
			result = termsafe.Line(r.Error)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%s\n", r.Time.Local().Format("2006-01-02 15:04:05"), r.Polecat, op,
			r.Files, r.Applied, r.Merged, r.Conflict, r.Deleted, result)
	}
	return tw.Flush()
}

// SyncResult prints a transfer's summary and each change; paths come from
// the container and are escaped.
func SyncResult(w io.Writer, id api.Identity, res api.SyncResult, took time.Duration) {
	fmt.Fprintf(w, "%s: %d file(s), %d bytes, in %s\n", id, res.Files, res.Bytes, took.Round(time.Millisecond))
	for _, c := range res.Changes {
		line := fmt.Sprintf("  %-10s %s", c.Action, termsafe.Line(c.Path))
		if c.Copy != "" {
			line += "  (container's version saved as " + termsafe.Line(c.Copy) + ")"
		}
		fmt.Fprintln(w, line)
	}
	for _, p := range res.Skipped {
		fmt.Fprintf(w, "  not sent   %s  (the container left it out: a symlink leading outside its data root or to a path that does not cross, or not a file)\n", termsafe.Line(p))
	}
	if res.More > 0 {
		fmt.Fprintf(w, "  and %d more change(s): 'hostd sync log' counts them all\n", res.More)
	}
}
