package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/polecat-sidecar/sidecar/hostd/api"
	"github.com/polecat-sidecar/sidecar/hostd/cli/command"
	"github.com/polecat-sidecar/sidecar/hostd/render"
	"github.com/polecat-sidecar/sidecar/internal/exit"
	"github.com/polecat-sidecar/sidecar/internal/termsafe"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// Exit statuses of hostd nudge, one per outcome.
const (
	exitNudgeFailed  = 1 // failed, dropped, cancelled, or the command itself failed
	exitNudgeQueued  = 3
	exitNudgeExpired = 4
)

// nudgeOptions are hostd nudge's flags.
type nudgeOptions struct {
	*command.App
	mode, priority, cancel string
	ttl, wait              time.Duration
	noWait, json, list     bool
}

func newNudgeCmd(a *command.App) *cobra.Command {
	o := &nudgeOptions{App: a}
	cmd := &cobra.Command{
		Use:   "nudge <rig>/<name> [MESSAGE...]",
		Short: "Type a message into a polecat's session, once, and say whether it was submitted",
		Long: `Type a message into the polecat's tmux pane through its agent, submit it with
Enter, and report what happened. The message is the arguments, or standard
input when there are none (or the only one is '-'). Control characters and
escape sequences are removed; tabs become spaces.

Modes:
  wait-idle  (default) type once the polecat is idle: Claude Code's hooks say
             so, or its prompt is empty and no spinner shows, or the pane is
             quiet; never into text someone is typing
  immediate  type now, busy or not (still never into someone's typing)
  queue      as wait-idle, but return as soon as the nudge is stored

Every nudge is stored before hostd answers and stays queued until the agent
reports it submitted or failed, it expires (--ttl; 30m normal, 2h urgent),
or it is cancelled. A disconnected polecat gets its nudges when it comes
back; a hostd restart loses none; a nudge is never typed twice.

Exit status: 0 submitted, 1 failed (or dropped, cancelled, or the command
failed), 3 still queued (--no-wait, mode queue, or --wait passed), 4 expired.`,
		Args: cobra.MinimumNArgs(1),
		RunE: o.run,
	}
	f := cmd.Flags()
	f.StringVar(&o.mode, "mode", wire.NudgeWaitIdle, "immediate, wait-idle or queue")
	f.StringVar(&o.priority, "priority", "normal", "normal or urgent (urgent nudges live longer and are dropped last from a full queue)")
	f.DurationVar(&o.ttl, "ttl", 0, "how long the nudge may wait to be delivered (default: nudge.ttl, or nudge.urgent_ttl when urgent)")
	f.DurationVar(&o.wait, "wait", 2*time.Minute, "how long to wait for the outcome before answering 'queued'")
	f.BoolVar(&o.noWait, "no-wait", false, "answer as soon as the nudge is stored")
	f.BoolVar(&o.json, "json", false, "print the outcome (or the queue) as JSON")
	f.BoolVar(&o.list, "list", false, "show the polecat's queued nudges")
	f.StringVar(&o.cancel, "cancel", "", "cancel the queued nudge with this id")
	return cmd
}

// run lists the polecat's queue (--list), cancels one nudge (--cancel),
// or sends one.
func (o *nudgeOptions) run(cmd *cobra.Command, args []string) error {
	id, err := wire.ParseIdentity(args[0])
	if err != nil {
		return err
	}
	c, ctx, out := o.Client(), cmd.Context(), cmd.OutOrStdout()
	switch {
	case o.list:
		return o.showQueue(ctx, out, c, id)
	case o.cancel != "":
		return o.cancelOne(ctx, out, c)
	}
	text, err := nudgeText(args[1:], cmd.InOrStdin())
	if err != nil {
		return err
	}
	return o.send(ctx, out, c, id, text)
}

func (o *nudgeOptions) showQueue(ctx context.Context, out io.Writer, c *api.Client, id wire.Identity) error {
	items, err := c.NudgeList(ctx, api.Identity(id))
	if err != nil {
		return err
	}
	if o.json {
		return command.WriteJSON(out, items)
	}
	printNudgeQueue(out, id, items)
	return nil
}

func (o *nudgeOptions) cancelOne(ctx context.Context, out io.Writer, c *api.Client) error {
	oc, err := c.NudgeCancel(ctx, o.cancel)
	if err != nil {
		return err
	}
	if o.json {
		return command.WriteJSON(out, oc)
	}
	fmt.Fprintf(out, "%s: nudge %s cancelled\n", oc.Polecat, oc.ID)
	return nil
}

// send nudges the polecat with text and ends with the outcome's exit
// status.
func (o *nudgeOptions) send(ctx context.Context, out io.Writer, c *api.Client, id wire.Identity, text string) error {
	req := api.NudgeRequest{Text: text, Mode: o.mode, Priority: o.priority, TTL: o.ttl, Wait: o.wait}
	if o.noWait {
		req.Wait = 0
	}
	oc, err := c.Nudge(ctx, api.Identity(id), req)
	if err != nil {
		return err
	}
	if o.json {
		if err := command.WriteJSON(out, oc); err != nil {
			return err
		}
	} else {
		printNudgeOutcome(out, oc)
	}
	return exit.Status(nudgeExit(oc.Outcome))
}

// nudgeText is the message: the arguments, or standard input.
func nudgeText(args []string, stdin io.Reader) (string, error) {
	if len(args) > 0 && !(len(args) == 1 && args[0] == "-") {
		return strings.Join(args, " "), nil
	}
	b, err := io.ReadAll(io.LimitReader(stdin, wire.MaxNudgeText+1))
	if err != nil {
		return "", fmt.Errorf("reading the message from standard input: %w", err)
	}
	if len(b) > wire.MaxNudgeText {
		return "", fmt.Errorf("the message is longer than %d bytes", wire.MaxNudgeText)
	}
	if strings.TrimSpace(string(b)) == "" {
		return "", errors.New("no message: give it as arguments or on standard input")
	}
	return string(b), nil
}

// nudgeExit is the exit status for an outcome.
func nudgeExit(outcome string) int {
	switch outcome {
	case wire.NudgeSubmitted:
		return 0
	case wire.NudgeQueued:
		return exitNudgeQueued
	case wire.NudgeExpired:
		return exitNudgeExpired
	}
	return exitNudgeFailed
}

func printNudgeOutcome(w io.Writer, o api.NudgeOutcome) {
	switch o.Outcome {
	case wire.NudgeSubmitted:
		fmt.Fprintf(w, "%s: nudge %s submitted at %s (%s)\n", o.Polecat, o.ID, o.At.Local().Format("15:04:05"), termsafe.Line(o.Detail))
	case wire.NudgeQueued:
		why := termsafe.Line(o.Detail)
		if why == "" {
			why = "not offered yet"
		}
		fmt.Fprintf(w, "%s: nudge %s queued until %s: %s\n", o.Polecat, o.ID, o.Expires.Local().Format("15:04:05"), why)
	default:
		fmt.Fprintf(w, "%s: nudge %s %s: %s\n", o.Polecat, o.ID, o.Outcome, termsafe.Line(o.Detail))
	}
	if d := o.Dropped; d != nil {
		fmt.Fprintf(w, "%s: nudge %s was dropped to make room: %s\n", d.Polecat, d.ID, termsafe.Line(d.Detail))
	}
}

func printNudgeQueue(w io.Writer, id wire.Identity, items []api.NudgeItem) {
	if len(items) == 0 {
		fmt.Fprintf(w, "%s: no nudges queued\n", id)
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tAGE\tMODE\tPRIORITY\tEXPIRES\tTRIES\tWHY WAITING\tTEXT")
	for _, it := range items {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\n", it.ID, time.Since(it.Created).Round(time.Second), it.Mode, it.Priority,
			it.Expires.Local().Format("15:04:05"), it.Attempts, render.Fit(termsafe.Line(render.OrDash(it.Why)), 50), render.Fit(termsafe.Line(it.Text), 40))
	}
	_ = tw.Flush()
}
