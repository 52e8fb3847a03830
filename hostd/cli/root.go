// Package cli is hostd's command line: NewRoot lists every subcommand.
// This package holds those that ask hostd serve about polecats (status,
// alive, peek, nudge, sync, forget), config show and doctor; its subpackages the
// rest: command what they all share (the App, the root command, output),
// ca the CA's commands, serve the daemon, run Gas Town's exec wrapper
// with attach and nuke. Each subcommand is a constructor and a named run
// function: its options' run method (TestSubcommandsRunNamed).
package cli

import (
	"github.com/spf13/cobra"

	"github.com/polecat-sidecar/sidecar/hostd/cli/ca"
	"github.com/polecat-sidecar/sidecar/hostd/cli/command"
	"github.com/polecat-sidecar/sidecar/hostd/cli/run"
	"github.com/polecat-sidecar/sidecar/hostd/cli/serve"
)

// NewRoot is hostd's command tree.
func NewRoot() *cobra.Command {
	return command.NewRoot(command.NewApp(),
		serve.NewServeCmd, ca.NewCACmd, ca.NewCertCmd, ca.NewTokenCmd, newStatusCmd, newAliveCmd,
		newSyncCmd, newNudgeCmd, newPeekCmd, run.NewAttachCmd, run.NewRunCmd, run.NewNukeCmd, newConfigCmd, newForgetCmd, newDoctorCmd)
}
