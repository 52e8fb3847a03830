//go:build linux

package main

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/polecat-sidecar/sidecar/agent/shim"
	"github.com/polecat-sidecar/sidecar/internal/exit"
)

// newExecCmd relays one command explicitly, for when no gt/bd symlink is
// installed or another socket is wanted.
func newExecCmd() *cobra.Command {
	var socket string
	cmd := &cobra.Command{
		Use:   "exec [--socket PATH] -- gt|bd ARGS...",
		Short: "Relay one gt or bd command to the host (what the gt and bd symlinks do)",
		Long: `Relay one gt or bd command to the host through the running agent, streaming
stdin, stdout and stderr and forwarding SIGINT, SIGTERM and SIGHUP. The exit
status is the host command's (128+signal if a signal ended it), or 255 with
one line on stderr when the command could not be relayed.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(_ *cobra.Command, args []string) error { return runExec(socket, args) },
	}
	cmd.Flags().StringVar(&socket, "socket", shim.SocketPath(), "the agent's relay socket (env "+shim.SocketEnv+")")
	return cmd
}

// runExec relays args (gt or bd, and its arguments) through the agent on
// socket and ends with the host command's exit status.
func runExec(socket string, args []string) error {
	sh := shim.Shim{Name: args[0], Socket: socket, Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr}
	return exit.Status(sh.Run(args[1:]))
}
