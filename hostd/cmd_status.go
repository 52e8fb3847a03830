package main

import (
	"encoding/json"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/polecat-sidecar/sidecar/hostd/control"
)

func (a *app) statusCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show every connected polecat: transport, remote address, connected since, RTT",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := control.NewClient(a.town()).Status(cmd.Context())
			if err != nil {
				return err
			}
			if asJSON, _ := cmd.Flags().GetBool("json"); asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(st)
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "hostd %s on %s, up %s, %d polecat(s) connected\n", st.Version, st.Listen, since(st.Started), len(st.Polecats))
			w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
			if len(st.Polecats) > 0 {
				fmt.Fprintln(w, "RIG\tPOLECAT\tTRANSPORT\tREMOTE\tSINCE\tRTT")
				for _, p := range st.Polecats {
					fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%.2fms\n", p.Rig, p.Name, p.Transport, p.Remote, since(p.Since), p.RTTMillis)
				}
			}
			if len(st.Upstream) > 0 {
				fmt.Fprintf(w, "\n%d branch(es) waiting to be pushed upstream:\n", len(st.Upstream))
				fmt.Fprintln(w, "RIG\tBRANCH\tWAITING\tATTEMPTS\tLAST ERROR")
				for _, u := range st.Upstream {
					fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%s\n", u.Rig, u.Branch, since(u.Since), u.Attempts, u.LastError)
				}
			}
			return w.Flush()
		},
	}
	cmd.Flags().Bool("json", false, "print JSON")
	return cmd
}

// since renders how long ago t was, to the second.
func since(t time.Time) string { return time.Since(t).Round(time.Second).String() }
