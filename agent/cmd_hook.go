//go:build linux

package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/polecat-sidecar/sidecar/agent/nudge"
	"github.com/polecat-sidecar/sidecar/agent/shim"
)

// newHookCmd tells the running agent about a Claude Code hook event: the
// image's Claude Code settings run it on UserPromptSubmit, PreToolUse,
// Stop and Notification, so nudges know truthfully when the polecat is
// idle. It never fails Claude Code: a problem is one line on stderr and
// exit status 0.
func newHookCmd() *cobra.Command {
	var socket string
	cmd := &cobra.Command{
		Use:   "hook EVENT",
		Short: "Tell the agent a Claude Code hook fired (UserPromptSubmit, PreToolUse, Stop, Notification)",
		Long: `Tell the running agent that a Claude Code hook event happened, so that nudges
are typed only when the polecat is idle: UserPromptSubmit and PreToolUse mean
busy, Stop and Notification mean idle. Claude Code's settings call it:

  {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "gt-agent hook Stop"}]}], ...}}

It exits 0 whatever happens (a hook must never break the session) and says
on stderr what went wrong.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := nudge.SendHook(socket, args[0]); err != nil {
				fmt.Fprintln(cmd.ErrOrStderr(), "gt-agent hook:", err)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&socket, "socket", nudge.HookSocketPath(shim.SocketPath()), "the agent's hook socket (env "+nudge.HookSocketEnv+"; default hooks.sock beside the relay socket)")
	return cmd
}
