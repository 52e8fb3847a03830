package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/polecat-sidecar/sidecar/hostd/api"
	"github.com/polecat-sidecar/sidecar/internal/termsafe"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

func newForgetCmd(a *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "forget <rig>/<name>",
		Short: "Remove a polecat whose tunnel is down from status, liveness.json and /metrics",
		Long: `Remove a polecat from what hostd shows and keeps: 'hostd status', its
last known state in <town>/.runtime/hostd/liveness.json, and its series in
/metrics. hostd otherwise lists every polecat it has seen, dead, revoked or
never back, for ever.

A polecat whose tunnel is up is refused: stop its agent, or revoke it, first.
A forgotten polecat that connects again is shown again. Its certificates,
revocations and queued nudges are untouched ('hostd nudge <rig>/<name>
--list').`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := wire.ParseIdentity(args[0])
			if err != nil {
				return err
			}
			p, err := api.NewClient(a.town()).Forget(cmd.Context(), id)
			if err != nil {
				return err
			}
			if asJSON {
				return encodeJSON(cmd.OutOrStdout(), p)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "forgot %s (%s for %s: %s)\n", id, p.State, time.Since(p.StateSince).Round(time.Second), termsafe.Line(p.Reason))
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the polecat's last status row as JSON")
	return cmd
}
