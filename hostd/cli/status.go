package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/polecat-sidecar/sidecar/hostd/api"
	"github.com/polecat-sidecar/sidecar/hostd/cli/command"
	"github.com/polecat-sidecar/sidecar/hostd/render"
	"github.com/polecat-sidecar/sidecar/internal/termsafe"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// statusOptions are hostd status's flags.
type statusOptions struct {
	*command.App
	json, watch, wide bool
	rig               string
	states            []string
}

func newStatusCmd(a *command.App) *cobra.Command {
	o := &statusOptions{App: a}
	cmd := &cobra.Command{
		Use:   "status [<rig>/<name>]",
		Short: "Show every polecat's state, tunnel and last heartbeat (or one polecat in detail)",
		Long: `Show every polecat hostd knows: how many are in each state, then a line each
with its state (working, idle, starting, stale, disconnected, dead, revoked;
with a ? while it is the last known state from before hostd restarted), for
how long, its tunnel (transport, RTT), when it last beat, its session's CPU,
memory and idle time, and its command (the polecat's own, as its session was
started with it). With <rig>/<name>, one polecat in detail with its recent
state changes. States are judged from heartbeats (see 'hostd serve --help'
for the thresholds); starting is a polecat on its way up: its agent connected
and not beating yet, or its sandbox's first session not started yet.

Below the table come the polecats 'hostd run' could not start (hostd serve
down, the image missing, the clone failing), each with why and what to do,
until its next start succeeds or Gas Town nukes it (start_failures in
--json; a polecat's detail has its own, and one that never connected shows
as dead).

On a terminal the table fits its width: names and states are never cut; the
less important columns go first (command, memory, CPU, RTT, transport, idle
time, last beat), then commands are cut. --wide, or output that is not a
terminal, shows every column and whole commands ($COLUMNS, when set, is the
width of output that is not a terminal). One polecat's command is cut to the
width likewise.

--watch refreshes every second until interrupted: on a terminal in place,
otherwise as one table after another, a blank line between them; with --json
one JSON object a line, each a whole status.

A polecat stays listed (and in /metrics) until 'hostd forget' removes it, or
it is nuked ('hostd nuke', or hostd serve once Gas Town has nuked a polecat
with a sandbox).`,
		Args: cobra.MaximumNArgs(1),
		RunE: o.run,
	}
	cmd.Flags().BoolVar(&o.json, "json", false, "print JSON (with --watch, one object a line)")
	cmd.Flags().BoolVar(&o.watch, "watch", false, "refresh every second until interrupted")
	cmd.Flags().BoolVar(&o.wide, "wide", false, "show every column and whole commands, whatever the terminal's width")
	cmd.Flags().StringVar(&o.rig, "rig", "", "only this rig's polecats")
	cmd.Flags().StringSliceVar(&o.states, "state", nil, "only polecats in this state (repeatable, or comma-separated): "+strings.Join(render.States, ", "))
	return cmd
}

// statusOutput is where status writes: out, the escaping writer, and
// styled, which is the writer under it on a terminal, where status is
// coloured (render.Status and render.Detail escape every field a polecat
// sent with termsafe.Line themselves); errOut takes errors while
// watching JSON, which keeps out one object a line.
type statusOutput struct {
	out, styled, errOut io.Writer
	tty                 bool
}

func newStatusOutput(cmd *cobra.Command) statusOutput {
	out := cmd.OutOrStdout()
	if command.IsTTY(out) {
		return statusOutput{out: out, styled: termsafe.Raw(out), errOut: cmd.ErrOrStderr(), tty: true}
	}
	return statusOutput{out: out, styled: out, errOut: cmd.ErrOrStderr()}
}

// width is the columns the table may use: the terminal's, $COLUMNS
// for output that is not a terminal, else 0 (no limit; --wide too).
func (w statusOutput) width(wide bool) int {
	if wide {
		return 0
	}
	if w.tty {
		if cols, _, err := term.GetSize(int(termsafe.Raw(w.out).(*os.File).Fd())); err == nil {
			return cols
		}
	}
	n, _ := strconv.Atoi(os.Getenv("COLUMNS"))
	return max(n, 0)
}

// run shows one polecat in detail, or every polecat once or (--watch)
// every second.
func (o *statusOptions) run(cmd *cobra.Command, args []string) error {
	for _, s := range o.states {
		if !slices.Contains(render.States, s) {
			return fmt.Errorf("--state %q: a polecat is %s", s, strings.Join(render.States, ", "))
		}
	}
	c, w := o.Client(), newStatusOutput(cmd)
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
	d, err := c.Polecat(ctx, api.Identity(id))
	if err != nil {
		return err
	}
	if o.json {
		return command.WriteJSON(w.out, d)
	}
	render.Detail(w.styled, d, render.DetailOptions{Width: w.width(o.wide), Colour: w.tty})
	return nil
}

// showAll shows every polecat (of --rig, in --state): the table, or
// JSON, one line of it when watching.
func (o *statusOptions) showAll(ctx context.Context, w statusOutput, c *api.Client) error {
	st, err := c.Status(ctx)
	if err != nil {
		return err
	}
	st.Polecats = filterRig(st.Polecats, o.rig, func(p api.Polecat) string { return p.Rig })
	st.StartFailures = filterRig(st.StartFailures, o.rig, func(f api.StartFailure) string { return f.Identity.Rig })
	switch {
	case o.json && o.watch:
		st.Polecats = api.InStates(st.Polecats, o.states)
		return command.EncodeJSON(w.out, st)
	case o.json:
		st.Polecats = api.InStates(st.Polecats, o.states)
		return command.WriteJSON(w.out, st)
	}
	render.Status(w.styled, st, render.StatusOptions{Width: w.width(o.wide), States: o.states, Colour: w.tty})
	return nil
}

// watchAll shows every polecat every second until SIGINT or SIGTERM: on
// a terminal in place (the screen cleared), else one table after another
// with a blank line between, or one JSON object a line. An error is shown
// in the table's place, or, watching JSON, on errOut.
func (o *statusOptions) watchAll(ctx context.Context, w statusOutput, c *api.Client) error {
	stopped, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	for first := true; ; first = false {
		switch {
		case o.json:
		case w.tty:
			fmt.Fprint(termsafe.Raw(w.out), "\033[H\033[2J")
		case !first:
			fmt.Fprintln(w.out)
		}
		if err := o.showAll(ctx, w, c); err != nil {
			if o.json {
				fmt.Fprintln(w.errOut, err)
			} else {
				fmt.Fprintln(w.out, err)
			}
		}
		select {
		case <-stopped.Done():
			return nil
		case <-time.After(time.Second):
		}
	}
}

// filterRig is those of list in rig (rigOf names each one's); all of
// them when rig is empty.
func filterRig[T any](list []T, rig string, rigOf func(T) string) []T {
	if rig == "" {
		return list
	}
	var out []T
	for _, v := range list {
		if rigOf(v) == rig {
			out = append(out, v)
		}
	}
	return out
}
