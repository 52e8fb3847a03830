package command

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/polecat-sidecar/sidecar/internal/cli"
	"github.com/polecat-sidecar/sidecar/internal/termsafe"
)

// Stdout and Stderr carry everything hostd prints (commands' output,
// errors, logs), escaped: much of it comes from polecats.
var Stdout, Stderr = termsafe.NewWriter(os.Stdout), termsafe.NewWriter(os.Stderr)

// New makes one subcommand (or group of them) of a's command tree.
type New func(a *App) *cobra.Command

// NewRoot is hostd's root command, with --config and a's root settings,
// loaded before any subcommand runs, over the subcommands subs makes and
// version.
func NewRoot(a *App, subs ...New) *cobra.Command {
	root := &cobra.Command{
		Use:   "hostd",
		Short: "The host side of polecat-sidecar: tunnels, certificates, relay, git and liveness for containerised polecats",
		Long: `hostd terminates the one mTLS tunnel (QUIC, or TLS+yamux over TCP) that each
polecat container's gt-agent holds, owns the town's CA at
<town>/.runtime/ca, serves gt/bd commands and git to the polecats, judges
their liveness from heartbeats, and shows every polecat ('hostd status').

Configuration comes from flags, then HOSTD_* environment variables (e.g.
HOSTD_LISTEN), then a YAML config file (--config, or
<town>/.runtime/hostd/config.yaml when present). The town root is --town,
else $HOSTD_TOWN, $GT_TOWN or $GT_ROOT (which Gas Town sets in every agent
session, so 'hostd run' as its exec wrapper finds the town), else ~/gt.`,
		SilenceUsage:      true,
		SilenceErrors:     true,
		Version:           cli.Version(),
		PersistentPreRunE: func(*cobra.Command, []string) error { return a.load() },
	}
	root.SetOut(Stdout)
	root.SetErr(Stderr)
	pf := root.PersistentFlags()
	pf.StringVar(&a.config, "config", "", "config file (default <town>/.runtime/hostd/config.yaml if it exists)")
	a.Register(pf, a.Root)
	for _, sub := range subs {
		root.AddCommand(sub(a))
	}
	root.AddCommand(cli.VersionCommand("hostd"))
	cli.StrictGroups(root)
	return root
}
