// Command hostd is the operator-side daemon of polecat-sidecar: it
// terminates the polecats' tunnels, owns the CA and certificates, and shows
// every polecat's state. Run 'hostd --help'.
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/spf13/viper"

	"github.com/polecat-sidecar/sidecar/hostd/git"
	"github.com/polecat-sidecar/sidecar/hostd/pki"
	"github.com/polecat-sidecar/sidecar/hostd/state"
	"github.com/polecat-sidecar/sidecar/internal/cli"
	"github.com/polecat-sidecar/sidecar/internal/exit"
	"github.com/polecat-sidecar/sidecar/internal/logging"
	"github.com/polecat-sidecar/sidecar/internal/settings"
	"github.com/polecat-sidecar/sidecar/internal/termsafe"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// stdout and stderr carry everything hostd prints (commands' output,
// errors, logs), escaped: much of it comes from polecats.
var stdout, stderr = termsafe.NewWriter(os.Stdout), termsafe.NewWriter(os.Stderr)

func main() {
	// hostd is also the git hooks it installs for receive-pack.
	switch filepath.Base(os.Args[0]) {
	case git.PreReceive:
		os.Exit(git.RunPreReceive(os.Stdin, os.Stderr))
	case git.PostReceive:
		os.Exit(git.RunPostReceive(os.Stdin))
	case git.PushToCheckout:
		os.Exit(git.RunPushToCheckout(os.Args[1:], os.Stderr))
	}
	os.Exit(exit.Code(newRoot().Execute(), "hostd", stderr))
}

// app holds what every subcommand shares: the merged configuration.
type app struct {
	v *viper.Viper
	// config is --config, the file merged under flags and environment.
	config string
	// root is the settings of every subcommand (town, trust domain,
	// logging); known is every setting any subcommand reads, root's
	// among them: a config key or HOSTD_* variable naming none is refused.
	root, known []settings.Setting
}

// envPrefix starts the environment variable of every setting.
const envPrefix = "HOSTD"

// rootSettings are the settings of every subcommand, read into r.
func rootSettings(r *rootValues) []settings.Setting {
	return []settings.Setting{
		{Key: "town", Flag: "town", Usage: "Gas Town root (default $HOSTD_TOWN, $GT_TOWN, $GT_ROOT or ~/gt)", Value: &r.town, Env: []string{"GT_TOWN", "GT_ROOT"}},
		{Key: "trust_domain", Flag: "trust-domain", Usage: "SPIFFE trust domain of polecat identities", Value: &r.trustDomain},
		{Key: "log_level", Flag: "log-level", Usage: "log level: debug, info, warn, error", Value: &r.logLevel},
		{Key: "log_format", Flag: "log-format", Usage: "log format: text or json", Value: &r.logFormat},
	}
}

// rootValues are what rootSettings read: their defaults until loaded.
type rootValues struct{ town, trustDomain, logLevel, logFormat string }

func newRoot() *cobra.Command {
	a := &app{v: viper.New()}
	a.root = rootSettings(&rootValues{trustDomain: wire.DefaultTrustDomain, logLevel: "info", logFormat: "text"})
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
	root.SetOut(stdout)
	root.SetErr(stderr)
	pf := root.PersistentFlags()
	pf.StringVar(&a.config, "config", "", "config file (default <town>/.runtime/hostd/config.yaml if it exists)")
	a.register(pf, a.root)
	root.AddCommand(newServeCmd(a), newCACmd(a), newCertCmd(a), newTokenCmd(a), newStatusCmd(a), newAliveCmd(a),
		newSyncCmd(a), newNudgeCmd(a), newPeekCmd(a), newAttachCmd(a), newRunCmd(a), newNukeCmd(a), newConfigCmd(a), newForgetCmd(a),
		cli.VersionCommand("hostd"))
	cli.StrictGroups(root)
	return root
}

// register defines the flags of a subcommand's settings on fs and binds
// them, and counts them known.
func (a *app) register(fs *pflag.FlagSet, table []settings.Setting) {
	settings.Register(fs, a.v, table)
	a.known = append(a.known, table...)
}

// where is where each setting's value came from, the flags being fs.
func (a *app) where(fs *pflag.FlagSet) func(settings.Setting) settings.Source {
	return func(s settings.Setting) settings.Source { return settings.Where(fs, a.v, envPrefix, s) }
}

// load merges flags, environment and the config file, refusing a HOSTD_*
// variable or config key that names no setting.
func (a *app) load() error {
	v := a.v
	v.SetEnvPrefix(envPrefix)
	v.SetEnvKeyReplacer(strings.NewReplacer("-", "_", ".", "_"))
	v.AutomaticEnv()
	if err := settings.CheckEnv(os.Environ(), envPrefix, a.known); err != nil {
		return fmt.Errorf("%w\n('hostd config show' lists every setting)", err)
	}
	if v.GetString("town") == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return fmt.Errorf("no --town given and no home directory: %w", err)
		}
		v.SetDefault("town", filepath.Join(home, "gt"))
	}
	cfgFile := a.config
	if cfgFile == "" {
		if p := state.For(a.town()).Config(); fileExists(p) {
			cfgFile = p
		}
	}
	if cfgFile != "" {
		v.SetConfigFile(cfgFile)
		if err := v.ReadInConfig(); err != nil {
			return fmt.Errorf("reading config %s: %w", cfgFile, err)
		}
		keys, err := settings.FileKeys(cfgFile)
		if err == nil {
			err = settings.CheckKeys(keys, a.known)
		}
		if err != nil {
			return fmt.Errorf("config %s:\n%w\n('hostd config show' lists every setting; docs/config.sample.yaml explains them)", cfgFile, err)
		}
	}
	return logging.SetDefault(stderr, a.v.GetString("log_level"), a.v.GetString("log_format"))
}

func (a *app) town() string {
	t, _ := filepath.Abs(a.v.GetString("town"))
	return t
}

// openCA opens the town's CA with the configured trust domain.
func (a *app) openCA() (*pki.CA, error) {
	return pki.Open(pki.Dir(a.town()), a.v.GetString("trust_domain"))
}

// openCAFor parses arg as a polecat's <rig>/<name> and opens the CA that
// is to certify it.
func (a *app) openCAFor(arg string) (wire.Identity, *pki.CA, error) {
	id, err := wire.ParseIdentity(arg)
	if err != nil {
		return wire.Identity{}, nil, err
	}
	c, err := a.openCA()
	return id, c, err
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
