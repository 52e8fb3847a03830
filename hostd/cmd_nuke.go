package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/spf13/cobra"

	"github.com/polecat-sidecar/sidecar/hostd/api"
	"github.com/polecat-sidecar/sidecar/hostd/pki"
	"github.com/polecat-sidecar/sidecar/hostd/sandbox"
	"github.com/polecat-sidecar/sidecar/hostd/server"
	"github.com/polecat-sidecar/sidecar/hostd/state"
	"github.com/polecat-sidecar/sidecar/internal/settings"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// nukeOptions are hostd nuke's settings.
type nukeOptions struct {
	*app
	runtime string
	table   []settings.Setting
}

func newNukeCmd(a *app) *cobra.Command {
	o := &nukeOptions{app: a, runtime: "docker"}
	o.table = []settings.Setting{{Key: "sandbox.runtime", Flag: "runtime", Usage: "container runtime: docker or podman", Value: &o.runtime}}
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
		RunE: o.run,
	}
	a.register(cmd.Flags(), o.table)
	return cmd
}

func (o *nukeOptions) run(cmd *cobra.Command, args []string) error {
	settings.Bind(cmd.Flags(), o.v, o.table) // sandbox.runtime is shared
	if err := settings.Load(o.v, o.table); err != nil {
		return err
	}
	id, ca, err := o.openCAFor(args[0])
	if err != nil {
		return err
	}
	return o.nuke(cmd.Context(), ca, sandbox.Runtime{Bin: o.runtime}, sandbox.Name(id), id, cmd.OutOrStdout())
}

// nuke revokes id's certificates (the running hostd closes its tunnels),
// removes its sandbox (container, a name or an ID) and forgets what hostd
// keeps of it, saying so on out: hostd nuke, and hostd run when the
// sandbox it finds is an earlier polecat's of the same name.
func (a *app) nuke(ctx context.Context, ca *pki.CA, rt sandbox.Runtime, container string, id wire.Identity, out io.Writer) error {
	revoke := func(id wire.Identity) error {
		if _, err := ca.Revoke(id.String()); err != nil {
			return err
		}
		r, err := a.applyRevocations(ctx)
		if err == nil {
			r.print(out)
		}
		return err
	}
	if err := sandbox.Nuke(ctx, rt, container, id, revoke); err != nil {
		return err
	}
	fmt.Fprintf(out, "removed %s, the sandbox of %s, and revoked its certificates\n", container, id)
	f, err := a.forgetNuked(ctx, id)
	if err != nil {
		return err
	}
	printForgotten(out, f)
	return nil
}

// nukeForgetWait is how long hostd nuke waits for the running hostd to see
// the tunnel its revocation closed go down before forgetting the polecat.
const nukeForgetWait = 10 * time.Second

// forgetNuked forgets what hostd keeps of a nuked polecat: through the
// running hostd, else in its files.
func (a *app) forgetNuked(ctx context.Context, id wire.Identity) (api.Forgotten, error) {
	f, err := api.NewSocketClient(state.For(a.town()).Socket()).Forget(ctx, api.Identity(id), nukeForgetWait)
	var refused *api.Error
	switch {
	case errors.Is(err, api.ErrNotRunning):
		return server.ForgetStopped(a.town(), id, slog.Default())
	case errors.As(err, &refused) && refused.Status == http.StatusNotFound:
		return api.Forgotten{Polecat: api.Identity(id)}, nil
	case err != nil:
		return f, fmt.Errorf("the sandbox is removed and the polecat revoked, but forgetting it failed (try 'hostd forget %s'): %w", id, err)
	}
	return f, nil
}
