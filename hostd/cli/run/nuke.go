package run

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
	"github.com/polecat-sidecar/sidecar/hostd/cli/command"
	"github.com/polecat-sidecar/sidecar/hostd/pki"
	"github.com/polecat-sidecar/sidecar/hostd/sandbox"
	"github.com/polecat-sidecar/sidecar/hostd/sandbox/runtimes"
	"github.com/polecat-sidecar/sidecar/hostd/server"
	"github.com/polecat-sidecar/sidecar/internal/settings"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// nukeOptions are hostd nuke's settings.
type nukeOptions struct {
	*command.App
	rt    runtimes.Config
	table []settings.Setting
}

// NewNukeCmd is hostd nuke.
func NewNukeCmd(a *command.App) *cobra.Command {
	o := &nukeOptions{App: a, rt: runtimes.DefaultConfig()}
	o.table = runtimes.Settings(&o.rt, "runtime")
	cmd := &cobra.Command{
		Use:   "nuke <rig>/<name>",
		Short: "Remove a polecat's sandbox, revoke its certificates and forget it",
		Long: `Remove the sandbox 'hostd run' made for a polecat, with its files (its
container; on Kubernetes its StatefulSet, claim, Secret and NetworkPolicy), revoke
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
	a.Register(cmd.Flags(), o.table)
	return cmd
}

func (o *nukeOptions) run(cmd *cobra.Command, args []string) error {
	settings.Bind(cmd.Flags(), o.Viper, o.table) // sandbox.runtime is shared
	if err := settings.Load(o.Viper, o.table); err != nil {
		return err
	}
	if err := settings.Explain(o.rt.Validate(), &o.rt, o.table, o.Where(cmd.Flags())); err != nil {
		return err
	}
	id, ca, err := o.OpenCAFor(args[0])
	if err != nil {
		return err
	}
	rt, err := runtimes.New(o.rt)
	if err != nil {
		return err
	}
	return nuke(cmd.Context(), o.App, ca, rt, sandbox.Name(id), id, cmd.OutOrStdout())
}

// nuke revokes id's certificates (the running hostd closes its tunnels),
// removes its sandbox (container, a name or an ID) and forgets what hostd
// keeps of it, saying so on out: hostd nuke, and hostd run when the
// sandbox it finds is an earlier polecat's of the same name.
func nuke(ctx context.Context, a *command.App, ca *pki.CA, rt sandbox.Runtime, container string, id wire.Identity, out io.Writer) error {
	revoke := func(id wire.Identity) error {
		if _, err := ca.Revoke(id.String()); err != nil {
			return err
		}
		r, err := a.ApplyRevocations(ctx)
		if err == nil {
			r.Print(out)
		}
		return err
	}
	if err := sandbox.Nuke(ctx, rt, container, id, revoke); err != nil {
		return err
	}
	fmt.Fprintf(out, "removed %s, the sandbox of %s, and revoked its certificates\n", container, id)
	f, err := forgetNuked(ctx, a, id)
	if err != nil {
		return err
	}
	command.PrintForgotten(out, f)
	return nil
}

// nukeForgetWait is how long hostd nuke waits for the running hostd to see
// the tunnel its revocation closed go down before forgetting the polecat.
const nukeForgetWait = 10 * time.Second

// forgetNuked forgets what hostd keeps of a nuked polecat: through the
// running hostd, else in its files.
func forgetNuked(ctx context.Context, a *command.App, id wire.Identity) (api.Forgotten, error) {
	f, err := a.Client().Forget(ctx, api.Identity(id), nukeForgetWait)
	var refused *api.Error
	switch {
	case errors.Is(err, api.ErrNotRunning):
		return server.ForgetStopped(a.Town(), id, slog.Default())
	case errors.As(err, &refused) && refused.Status == http.StatusNotFound:
		return api.Forgotten{Polecat: api.Identity(id)}, nil
	case err != nil:
		return f, fmt.Errorf("the sandbox is removed and the polecat revoked, but forgetting it failed (try 'hostd forget %s'): %w", id, err)
	}
	return f, nil
}
