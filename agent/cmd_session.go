//go:build linux

package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/polecat-sidecar/sidecar/agent/liveness"
	"github.com/polecat-sidecar/sidecar/agent/tmux"
	"github.com/polecat-sidecar/sidecar/internal/exit"
)

// newSessionRunCmd is the wrapper gt-agent starts in the tmux session: it
// runs the polecat's command and records its exit status.
func newSessionRunCmd() *cobra.Command {
	var statusFile, dir string
	cmd := &cobra.Command{
		Use:    "session-run --status-file FILE [--dir DIR] -- CMD ARGS...",
		Short:  "Run the session's command and record its exit status (started by 'gt-agent up' and 'gt-agent session start')",
		Hidden: true,
		Args:   cobra.MinimumNArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			return exit.Status(liveness.RunAndRecord(statusFile, dir, args))
		},
	}
	cmd.Flags().StringVar(&statusFile, "status-file", "", "where to write the exit status")
	cmd.Flags().StringVar(&dir, "dir", "", "the command's working directory")
	_ = cmd.MarkFlagRequired("status-file")
	return cmd
}

// sessionOptions are the flags gt-agent session's subcommands share.
type sessionOptions struct {
	name, tmuxSocket, tag string
}

// server is the tmux server the sessions are on.
func (o *sessionOptions) server() tmux.Server {
	if o.tmuxSocket != "" {
		return tmux.Server{Args: []string{"-S", o.tmuxSocket}}
	}
	return tmux.Server{}
}

// newSessionCmd is 'gt-agent session': starting and ending the polecat's
// sessions in a sandbox by hand, as hostd run does over the tunnel.
func newSessionCmd() *cobra.Command {
	o := &sessionOptions{}
	cmd := &cobra.Command{
		Use:   "session",
		Short: "Start and end the polecat's sessions in a sandbox container by hand",
		Long: `In a sandbox, the container 'hostd run' keeps for a polecat across its
sessions, gt-agent up runs with --watch-session and no command, and each
session Gas Town starts is started in the watched tmux session (hostd run
asks the agent over the tunnel, the sandbox channel): nudges, peek, attach
and the beats follow it. These commands do the same from a shell in the
container.`,
	}
	cmd.PersistentFlags().StringVar(&o.name, "session", "polecat", "the tmux session (the one gt-agent up --watch-session watches)")
	cmd.PersistentFlags().StringVar(&o.tmuxSocket, "tmux-socket", "", "tmux server socket path (default: tmux's own)")
	cmd.PersistentFlags().StringVar(&o.tag, "tag", "", "name of the session (letters, digits, '-', '_'): stop with the same tag ends this session and not a later one that replaced it; a start with the tag of the session there leaves it as it is")
	cmd.AddCommand(newSessionStartCmd(o), newSessionStopCmd(o))
	return cmd
}

// sessionStartOptions are gt-agent session start's flags.
type sessionStartOptions struct {
	*sessionOptions
	dir string
	env []string
}

func newSessionStartCmd(so *sessionOptions) *cobra.Command {
	o := &sessionStartOptions{sessionOptions: so}
	cmd := &cobra.Command{
		Use:   "start [--dir DIR] [--env NAME]... -- CMD ARGS...",
		Short: "Start the polecat's command in the session, replacing what ran there, and wait for it",
		Long: `Start CMD in the tmux session (a new one, or in place of the command
running there: the session before is over), wait until it exits, and exit
with its status. If this command is killed, the session runs on: end it with
'gt-agent session stop'. hostd attach shows the session meanwhile.`,
		Args: cobra.MinimumNArgs(1),
		RunE: o.run,
	}
	cmd.Flags().StringVar(&o.dir, "dir", "", "the command's working directory")
	cmd.Flags().StringSliceVar(&o.env, "env", nil, "pass this variable of this command's environment on to the session: its command and every process started in it (repeatable; one the session before had and this one has not is removed)")
	return cmd
}

func (o *sessionStartOptions) run(cmd *cobra.Command, args []string) error {
	ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	var env []string
	for _, name := range o.env {
		if v, ok := os.LookupEnv(name); ok {
			env = append(env, name+"="+v)
		}
	}
	srv := o.server()
	if err := liveness.StartSession(ctx, srv, liveness.SessionSpec{Name: o.name, Command: args, Dir: o.dir, Env: env, Tag: o.tag}); err != nil {
		return err
	}
	code, err := liveness.WaitSession(ctx, srv, o.name, o.tag, 100*time.Millisecond)
	if errors.Is(err, context.Canceled) {
		return exit.Status(128 + int(syscall.SIGTERM))
	}
	if err != nil {
		return err
	}
	return exit.Status(code)
}

func newSessionStopCmd(o *sessionOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "stop",
		Short: "End the session and its command (the sandbox stays)",
		Long: `End the session and its command; the sandbox stays. With --tag, only
the session started with that tag: one a later 'session start' replaced
runs on (hostd run's session ending as the next one starts, after a
respawn of Gas Town's pane).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			stopped, err := liveness.StopSession(cmd.Context(), o.server(), o.name, o.tag)
			if err == nil && !stopped && o.tag != "" {
				fmt.Fprintf(cmd.ErrOrStderr(), "gt-agent: session %s is not the one tagged %s (a later session replaced it, or it ended): left as it is\n", o.name, o.tag)
			}
			return err
		},
	}
}
