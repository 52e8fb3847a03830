package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/spf13/cobra"

	"github.com/polecat-sidecar/sidecar/hostd/api"
	"github.com/polecat-sidecar/sidecar/hostd/sandbox"
	"github.com/polecat-sidecar/sidecar/hostd/server"
	"github.com/polecat-sidecar/sidecar/internal/settings"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

func newNukeCmd(a *app) *cobra.Command {
	runtime := "docker"
	table := []settings.Setting{{Key: "sandbox.runtime", Flag: "runtime", Usage: "container runtime: docker or podman", Value: &runtime}}
	cmd := &cobra.Command{
		Use:   "nuke <rig>/<name>",
		Short: "Remove a polecat's sandbox container, revoke its certificates and forget it",
		Long: `Remove the sandbox 'hostd run' made for a polecat, with its files, revoke
every certificate of the polecat issued until now, closing its tunnels, and
forget what hostd keeps of it, as 'hostd forget' does (its status row and
liveness record, queued nudges, data base and delete hold, relayed commands'
temporary directory, an ended hostd run's pane record), even when no hostd
runs. Gas Town gives the name to its next polecat, which starts afresh. The
polecat's data root, its revocations and the branches it landed that wait
for origin stay. For a polecat Gas Town has nuked, 'hostd serve' does this
by itself once the polecat's directory <town>/<rig>/polecats/<name> is gone;
this is the same by hand. A session cycle never removes the sandbox.`,
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
			f, err := a.forgetNuked(cmd.Context(), id)
			if err != nil {
				return err
			}
			printForgotten(out, f)
			return nil
		},
	}
	a.register(cmd.Flags(), table)
	return cmd
}

// nukeForgetWait is how long hostd nuke waits for the running hostd to see
// the tunnel its revocation closed go down before forgetting the polecat.
const nukeForgetWait = 10 * time.Second

// forgetNuked forgets what hostd keeps of a nuked polecat: through the
// running hostd, else in its files.
func (a *app) forgetNuked(ctx context.Context, id wire.Identity) (api.Forgotten, error) {
	f, err := api.NewClient(a.town()).Forget(ctx, id, nukeForgetWait)
	var refused *api.Error
	switch {
	case errors.Is(err, api.ErrNotRunning):
		return server.ForgetStopped(a.town(), id, slog.Default())
	case errors.As(err, &refused) && refused.Status == http.StatusNotFound:
		return api.Forgotten{Polecat: id}, nil
	case err != nil:
		return f, fmt.Errorf("the sandbox is removed and the polecat revoked, but forgetting it failed (try 'hostd forget %s'): %w", id, err)
	}
	return f, nil
}
