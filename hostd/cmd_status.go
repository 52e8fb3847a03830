package main

import (
	"context"
	"fmt"
	"io"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/polecat-sidecar/sidecar/hostd/api"
	"github.com/polecat-sidecar/sidecar/hostd/render"
	"github.com/polecat-sidecar/sidecar/internal/termsafe"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// statusOptions are hostd status's flags.
type statusOptions struct {
	*app
	json, watch bool
	rig         string
}

func newStatusCmd(a *app) *cobra.Command {
	o := &statusOptions{app: a}
	cmd := &cobra.Command{
		Use:   "status [<rig>/<name>]",
		Short: "Show every polecat's state, tunnel and last heartbeat (or one polecat in detail)",
		Long: `Show every polecat hostd knows: its state (working, idle, stale, disconnected,
dead, revoked), for how long, its tunnel (transport, RTT), when it last beat,
its session's CPU, memory and idle time, and its command. With <rig>/<name>,
one polecat in detail with its recent state changes. States are judged from
heartbeats: see 'hostd serve --help' for the thresholds.`,
		Args: cobra.MaximumNArgs(1),
		RunE: o.run,
	}
	cmd.Flags().BoolVar(&o.json, "json", false, "print JSON")
	cmd.Flags().BoolVar(&o.watch, "watch", false, "refresh every second until interrupted")
	cmd.Flags().StringVar(&o.rig, "rig", "", "only this rig's polecats")
	return cmd
}

// statusOutput is where status writes: out, the escaping writer, and
// styled, which is the writer under it on a terminal, where status is
// coloured (render.Status and render.Detail escape every field a polecat
// sent with termsafe.Line themselves).
type statusOutput struct {
	out, styled io.Writer
	colour      bool
}

func newStatusOutput(out io.Writer) statusOutput {
	if isTTY(out) {
		return statusOutput{out: out, styled: termsafe.Raw(out), colour: true}
	}
	return statusOutput{out: out, styled: out}
}

// run shows one polecat in detail, or every polecat once or (--watch)
// every second.
func (o *statusOptions) run(cmd *cobra.Command, args []string) error {
	c, w := api.NewClient(o.town()), newStatusOutput(cmd.OutOrStdout())
	switch {
	case len(args) == 1:
		return o.showOne(cmd.Context(), w, c, args[0])
	case o.watch:
		return o.watchAll(cmd.Context(), w, c)
	}
	return o.showAll(cmd.Context(), w, c)
}

func (o *statusOptions) showOne(ctx context.Context, w statusOutput, c *api.Client, arg string) error {
	id, err := wire.ParseIdentity(arg)
	if err != nil {
		return err
	}
	d, err := c.Polecat(ctx, id)
	if err != nil {
		return err
	}
	if o.json {
		return writeJSON(w.out, d)
	}
	render.Detail(w.styled, d, w.colour)
	return nil
}

func (o *statusOptions) showAll(ctx context.Context, w statusOutput, c *api.Client) error {
	st, err := c.Status(ctx)
	if err != nil {
		return err
	}
	st.Polecats = filterRig(st.Polecats, o.rig)
	if o.json {
		return writeJSON(w.out, st)
	}
	render.Status(w.styled, st, w.colour)
	return nil
}

// watchAll clears the screen and shows every polecat, every second
// until SIGINT or SIGTERM; an error is shown in the table's place.
func (o *statusOptions) watchAll(ctx context.Context, w statusOutput, c *api.Client) error {
	stopped, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	for {
		fmt.Fprint(termsafe.Raw(w.out), "\033[H\033[2J")
		if err := o.showAll(ctx, w, c); err != nil {
			fmt.Fprintln(w.out, err)
		}
		select {
		case <-stopped.Done():
			return nil
		case <-time.After(time.Second):
		}
	}
}

func filterRig(ps []api.Polecat, rig string) []api.Polecat {
	if rig == "" {
		return ps
	}
	var out []api.Polecat
	for _, p := range ps {
		if p.Rig == rig {
			out = append(out, p)
		}
	}
	return out
}
