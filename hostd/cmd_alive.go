package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/polecat-sidecar/sidecar/heartbeat"
	"github.com/polecat-sidecar/sidecar/hostd/api"
	"github.com/polecat-sidecar/sidecar/internal/exit"
	"github.com/polecat-sidecar/sidecar/internal/termsafe"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// aliveOptions are hostd alive's flags.
type aliveOptions struct {
	*app
	json bool
}

func newAliveCmd(a *app) *cobra.Command {
	o := &aliveOptions{app: a}
	cmd := &cobra.Command{
		Use:   "alive <rig>/<name>",
		Short: "Exit 0 if the polecat is working or idle, 1 otherwise (for scripts)",
		Long: `Exit 0 if the polecat is working or idle, 1 otherwise, printing its state.
This replaces checking for process names in tmux panes: the state comes from
heartbeats measured inside the container.

With --json it prints one object: identity, alive (true when working or
idle), state and reason; the exit status is the same.`,
		Args: cobra.ExactArgs(1),
		RunE: o.run,
	}
	cmd.Flags().BoolVar(&o.json, "json", false, "print one JSON object")
	return cmd
}

// aliveness is what hostd alive --json prints.
type aliveness struct {
	Identity wire.Identity `json:"identity"`
	Alive    bool          `json:"alive"`
	State    string        `json:"state"`
	Reason   string        `json:"reason"`
}

// run prints the polecat's state and ends with status 1 unless it is
// alive.
func (o *aliveOptions) run(cmd *cobra.Command, args []string) error {
	id, err := wire.ParseIdentity(args[0])
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), 5*time.Second)
	defer cancel()
	d, err := api.NewClient(o.town()).Polecat(ctx, id)
	if err != nil {
		return err
	}
	res := aliveness{Identity: id, Alive: heartbeat.State(d.State).Alive(), State: d.State, Reason: d.Reason}
	if o.json {
		if err := encodeJSON(cmd.OutOrStdout(), res); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(cmd.OutOrStdout(), "%s: %s (%s)\n", id, d.State, termsafe.Line(d.Reason))
	}
	if !res.Alive {
		return exit.Status(1)
	}
	return nil
}
