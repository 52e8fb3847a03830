package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/polecat-sidecar/sidecar/hostd/sandbox"
	"github.com/polecat-sidecar/sidecar/internal/settings"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

func newNukeCmd(a *app) *cobra.Command {
	runtime := "docker"
	table := []settings.Setting{{Key: "sandbox.runtime", Flag: "runtime", Usage: "container runtime: docker or podman", Value: &runtime}}
	cmd := &cobra.Command{
		Use:   "nuke <rig>/<name>",
		Short: "Remove a polecat's sandbox container and revoke its certificates",
		Long: `Remove the sandbox 'hostd run' made for a polecat, with its files, and revoke
every certificate of the polecat issued until now, closing its tunnels. For
a polecat Gas Town has nuked, 'hostd serve' does this by itself once the
polecat's directory <town>/<rig>/polecats/<name> is gone; this is the same by
hand. A session cycle never removes the sandbox.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			settings.Bind(cmd.Flags(), a.v, table) // sandbox.runtime is shared
			if err := settings.Load(a.v, table); err != nil {
				return err
			}
			id, ca, err := a.openCAFor(args[0])
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			revoke := func(id wire.Identity) error {
				if _, err := ca.Revoke(id.String()); err != nil {
					return err
				}
				r, err := a.applyRevocations(cmd.Context())
				if err == nil {
					r.print(out)
				}
				return err
			}
			name := sandbox.Name(id)
			if err := sandbox.Nuke(cmd.Context(), sandbox.Runtime{Bin: runtime}, name, id, revoke); err != nil {
				return err
			}
			fmt.Fprintf(out, "removed %s, the sandbox of %s, and revoked its certificates\n", name, id)
			return nil
		},
	}
	a.register(cmd.Flags(), table)
	return cmd
}
