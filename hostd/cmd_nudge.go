package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/polecat-sidecar/sidecar/hostd/api"

	"github.com/spf13/cobra"

	"github.com/polecat-sidecar/sidecar/internal/termsafe"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// Exit statuses of hostd nudge, one per outcome.
const (
	exitNudgeFailed  = 1 // failed, dropped, cancelled, or the command itself failed
	exitNudgeQueued  = 3
	exitNudgeExpired = 4
)

func (a *app) nudgeCmd() *cobra.Command {
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
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := wire.ParseIdentity(args[0])
			if err != nil {
				return err
			}
			c := api.NewClient(a.town())
			asJSON, _ := cmd.Flags().GetBool("json")
			out := cmd.OutOrStdout()
			if list, _ := cmd.Flags().GetBool("list"); list {
				items, err := c.NudgeList(cmd.Context(), id)
				if err != nil {
					return err
				}
				if asJSON {
					return writeJSON(out, items)
				}
				printNudgeQueue(out, id, items)
				return nil
			}
			if nid, _ := cmd.Flags().GetString("cancel"); nid != "" {
				o, err := c.NudgeCancel(cmd.Context(), nid)
				if err != nil {
					return err
				}
				if asJSON {
					return writeJSON(out, o)
				}
				fmt.Fprintf(out, "%s: nudge %s cancelled\n", o.Polecat, o.ID)
				return nil
			}
			text, err := nudgeText(args[1:], cmd.InOrStdin())
			if err != nil {
				return err
			}
			req := api.NudgeRequest{Text: text}
			req.Mode, _ = cmd.Flags().GetString("mode")
			req.Priority, _ = cmd.Flags().GetString("priority")
			req.TTL, _ = cmd.Flags().GetDuration("ttl")
			req.Wait, _ = cmd.Flags().GetDuration("wait")
			if noWait, _ := cmd.Flags().GetBool("no-wait"); noWait {
				req.Wait = 0
			}
			o, err := c.Nudge(cmd.Context(), id, req)
			if err != nil {
				return err
			}
			if asJSON {
				if err := writeJSON(out, o); err != nil {
					return err
				}
			} else {
				printNudgeOutcome(out, o)
			}
			if code := nudgeExit(o.Outcome); code != 0 {
				os.Exit(code)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.String("mode", wire.NudgeWaitIdle, "immediate, wait-idle or queue")
	f.String("priority", "normal", "normal or urgent (urgent nudges live longer and are dropped last from a full queue)")
	f.Duration("ttl", 0, "how long the nudge may wait to be delivered (default: nudge.ttl, or nudge.urgent_ttl when urgent)")
	f.Duration("wait", 2*time.Minute, "how long to wait for the outcome before answering 'queued'")
	f.Bool("no-wait", false, "answer as soon as the nudge is stored")
	f.Bool("json", false, "print the outcome (or the queue) as JSON")
	f.Bool("list", false, "show the polecat's queued nudges")
	f.String("cancel", "", "cancel the queued nudge with this id")
	return cmd
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
			it.Expires.Local().Format("15:04:05"), it.Attempts, fit(termsafe.Line(orDash(it.Why)), 50), fit(termsafe.Line(it.Text), 40))
	}
	_ = tw.Flush()
}
