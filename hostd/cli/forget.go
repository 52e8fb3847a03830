package cli

import (
	"github.com/spf13/cobra"

	"github.com/polecat-sidecar/sidecar/hostd/api"
	"github.com/polecat-sidecar/sidecar/hostd/cli/command"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// forgetOptions are hostd forget's flags.
type forgetOptions struct {
	*command.App
	json bool
}

func newForgetCmd(a *command.App) *cobra.Command {
	o := &forgetOptions{App: a}
	cmd := &cobra.Command{
		Use:   "forget <rig>/<name>",
		Short: "Remove what hostd keeps of a polecat whose tunnel is down: status, liveness, nudges, data base",
		Long: `Remove what hostd keeps of a polecat, at once: its row in 'hostd status', its
last known state in <town>/.runtime/hostd/liveness.json and its series in
/metrics; the nudges queued for it (cancelled); its data channel's base and
delete hold (<town>/.runtime/hostd/data/<rig>/<name>: the hold is a list of
paths, the files are in the polecat's data root, which stays); its relayed
commands' temporary directory (<town>/.runtime/hostd/relay/tmp/<rig>/<name>);
and the pane record of a 'hostd run' that has ended. Otherwise hostd keeps a
polecat it has seen, dead, revoked or never back, for ever. 'hostd nuke', and
'hostd serve' once Gas Town has nuked a polecat with a sandbox, forget it
themselves: Gas Town gives the name to its next polecat, which must not
inherit the old one's state.

A polecat whose tunnel is up is refused: stop its agent, or revoke it, first.
A forgotten polecat that connects again is shown again, and its next data
exchange is a whole one (no base: nothing counts as deleted). Its
certificates and revocations, and the branches it landed that wait for
origin, stay.

With --json it prints one object: polecat, listed (whether status listed
it), last (its last status row, when listed), nudges_cancelled and removed
(the paths removed).`,
		Args: cobra.ExactArgs(1),
		RunE: o.run,
	}
	cmd.Flags().BoolVar(&o.json, "json", false, "print what was removed as JSON")
	return cmd
}

func (o *forgetOptions) run(cmd *cobra.Command, args []string) error {
	id, err := wire.ParseIdentity(args[0])
	if err != nil {
		return err
	}
	f, err := o.Client().Forget(cmd.Context(), api.Identity(id), 0)
	if err != nil {
		return err
	}
	if o.json {
		return command.EncodeJSON(cmd.OutOrStdout(), f)
	}
	command.PrintForgotten(cmd.OutOrStdout(), f)
	return nil
}
