package main

import (
	"github.com/spf13/cobra"

	"github.com/polecat-sidecar/sidecar/agent/liveness"
	"github.com/polecat-sidecar/sidecar/internal/exit"
)

// newSessionRunCmd is the wrapper gt-agent up starts in the tmux session:
// it runs the polecat's command and records its exit status.
func newSessionRunCmd() *cobra.Command {
	var statusFile string
	cmd := &cobra.Command{
		Use:    "session-run --status-file FILE -- CMD ARGS...",
		Short:  "Run the session's command and record its exit status (started by 'gt-agent up')",
		Hidden: true,
		Args:   cobra.MinimumNArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			return exit.Status(liveness.RunAndRecord(statusFile, args))
		},
	}
	cmd.Flags().StringVar(&statusFile, "status-file", "", "where to write the exit status")
	_ = cmd.MarkFlagRequired("status-file")
	return cmd
}
