package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/polecat-sidecar/sidecar/heartbeat"
	"github.com/polecat-sidecar/sidecar/hostd/api"
	"github.com/polecat-sidecar/sidecar/hostd/cli/command"
	"github.com/polecat-sidecar/sidecar/internal/exit"
	"github.com/polecat-sidecar/sidecar/internal/termsafe"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// Exit statuses of hostd alive besides 0 (alive).
const (
	exitNotAlive = 1 // not alive, or the command failed
	exitNotKnown = 3 // hostd cannot tell yet
)

// alivePoll is how often hostd alive --wait asks hostd again.
const alivePoll = 200 * time.Millisecond

// aliveOptions are hostd alive's flags.
type aliveOptions struct {
	*command.App
	json bool
	wait time.Duration
}

func newAliveCmd(a *command.App) *cobra.Command {
	o := &aliveOptions{App: a}
	cmd := &cobra.Command{
		Use:   "alive <rig>/<name>",
		Short: "Exit 0 if the polecat is working or idle, 1 if not, 3 if hostd cannot tell yet (for scripts)",
		Long: `Print the polecat's state and exit with what it says. This replaces checking
for process names in tmux panes: the state comes from heartbeats measured
inside the container.

Exit status:
  0  alive: working or idle, judged from its beats since hostd started
  1  not alive: stale, disconnected, dead or revoked; or the command failed
     (no such polecat, hostd not running)
  3  not known yet: hostd restarted and the polecat's agent is not back
     (what hostd status shows with a ?, its last known state from before,
     is no answer; a last known dead is 1), or it is starting (its agent
     connected and has not beaten yet, or its sandbox's first session has
     not started)

--wait DURATION asks again until the answer is 0 or 1 (the agent back and
beating, say) or DURATION has passed, then answers as above; without it
hostd alive answers at once.

With --json it prints one object: identity, alive (true for exit status 0),
state, restored (the state is the last known one from before hostd
restarted) and reason; the exit status is the same.`,
		Args: cobra.ExactArgs(1),
		RunE: o.run,
	}
	cmd.Flags().BoolVar(&o.json, "json", false, "print one JSON object")
	cmd.Flags().DurationVar(&o.wait, "wait", 0, "while hostd cannot tell yet (exit status 3), ask again for up to this long (e.g. 30s)")
	return cmd
}

// aliveness is what hostd alive --json prints.
type aliveness struct {
	Identity wire.Identity `json:"identity"`
	Alive    bool          `json:"alive"`
	State    string        `json:"state"`
	Restored bool          `json:"restored"`
	Reason   string        `json:"reason"`
}

// aliveExit is hostd alive's exit status for polecat p.
func aliveExit(p api.Polecat) int {
	state := heartbeat.State(p.State)
	switch {
	case state == heartbeat.Starting,
		p.Restored && state != heartbeat.Dead && state != heartbeat.Revoked:
		return exitNotKnown
	case state.Alive():
		return 0
	}
	return exitNotAlive
}

// run prints the polecat's state, once it is known or --wait has passed,
// and ends with its exit status.
func (o *aliveOptions) run(cmd *cobra.Command, args []string) error {
	id, err := wire.ParseIdentity(args[0])
	if err != nil {
		return err
	}
	if o.wait < 0 {
		return fmt.Errorf("--wait %v: give a duration of 0 or more", o.wait)
	}
	c, until := o.Client(), time.Now().Add(o.wait)
	for {
		ctx, cancel := context.WithTimeout(cmd.Context(), 5*time.Second)
		d, err := c.Polecat(ctx, api.Identity(id))
		cancel()
		if err != nil {
			return err
		}
		code := aliveExit(d.Polecat)
		if left := time.Until(until); code != exitNotKnown || left <= 0 {
			return o.answer(cmd, d.Polecat, code)
		}
		select {
		case <-cmd.Context().Done():
			return cmd.Context().Err()
		case <-time.After(min(alivePoll, time.Until(until))):
		}
	}
}

// answer prints what hostd alive found of p and ends with code.
func (o *aliveOptions) answer(cmd *cobra.Command, p api.Polecat, code int) error {
	if o.json {
		res := aliveness{Identity: wire.Identity(p.Identity), Alive: code == 0, State: p.State, Restored: p.Restored, Reason: p.Reason}
		if err := command.EncodeJSON(cmd.OutOrStdout(), res); err != nil {
			return err
		}
	} else {
		state, note := p.State, ""
		if p.Restored {
			state, note = state+"?", "; the last known state, from before hostd restarted: its agent is not back yet"
		}
		fmt.Fprintf(cmd.OutOrStdout(), "%s: %s (%s%s)\n", p.Identity, state, termsafe.Line(p.Reason), note)
	}
	return exit.Status(code)
}
