// Package command holds what every hostd subcommand shares: the App each
// is made with (the merged configuration of flags, HOSTD_* variables and
// the config file; the town and its CA), the root command they hang from
// (NewRoot), the writers and helpers they print with, and the daemon's
// answers that more than one of them prints (revocations applied, a
// polecat forgotten). hostd/cli lists the subcommands.
package command

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"
	"github.com/spf13/viper"

	"github.com/polecat-sidecar/sidecar/hostd/api"
	"github.com/polecat-sidecar/sidecar/hostd/pki"
	"github.com/polecat-sidecar/sidecar/hostd/state"
	"github.com/polecat-sidecar/sidecar/internal/logging"
	"github.com/polecat-sidecar/sidecar/internal/settings"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// App holds what every subcommand shares: the merged configuration.
type App struct {
	// Viper merges the settings: flags over HOSTD_* variables over the
	// config file over the defaults.
	Viper *viper.Viper
	// Root is the settings of every subcommand (town, trust domain,
	// logging).
	Root []settings.Setting
	// config is --config, the file merged under flags and environment.
	config string
	// known is every setting any subcommand reads, Root's among them: a
	// config key or HOSTD_* variable naming none is refused.
	known []settings.Setting
}

// NewApp is the App of a command tree of hostd, its root
// settings at their defaults until loaded.
func NewApp() *App {
	a := &App{Viper: viper.New()}
	a.Root = rootSettings(&rootValues{trustDomain: wire.DefaultTrustDomain, logLevel: "info", logFormat: "text"})
	return a
}

// EnvPrefix starts the environment variable of every setting.
const EnvPrefix = "HOSTD"

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

// Register defines the flags of a subcommand's settings on fs and binds
// them, and counts them known.
func (a *App) Register(fs *pflag.FlagSet, table []settings.Setting) {
	settings.Register(fs, a.Viper, table)
	a.known = append(a.known, table...)
}

// Where is where each setting's value came from, the flags being fs.
func (a *App) Where(fs *pflag.FlagSet) func(settings.Setting) settings.Source {
	return func(s settings.Setting) settings.Source { return settings.Where(fs, a.Viper, EnvPrefix, s) }
}

// load merges flags, environment and the config file, refusing a HOSTD_*
// variable or config key that names no setting.
func (a *App) load() error {
	v := a.Viper
	v.SetEnvPrefix(EnvPrefix)
	v.SetEnvKeyReplacer(strings.NewReplacer("-", "_", ".", "_"))
	v.AutomaticEnv()
	if err := settings.CheckEnv(os.Environ(), EnvPrefix, a.known); err != nil {
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
		if p := state.For(a.Town()).Config(); FileExists(p) {
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
	return logging.SetDefault(Stderr, a.Viper.GetString("log_level"), a.Viper.GetString("log_format"))
}

// Town is the town's root directory, absolute.
func (a *App) Town() string {
	t, _ := filepath.Abs(a.Viper.GetString("town"))
	return t
}

// Client asks the hostd serve of the town, at its control socket.
func (a *App) Client() *api.Client { return api.NewSocketClient(state.For(a.Town()).Socket()) }

// ConfigPath is the config file hostd reads (or would).
func (a *App) ConfigPath() string {
	if a.config != "" {
		return a.config
	}
	return state.For(a.Town()).Config()
}

// OpenCA opens the town's CA with the configured trust domain.
func (a *App) OpenCA() (*pki.CA, error) {
	return pki.Open(pki.Dir(a.Town()), a.Viper.GetString("trust_domain"))
}

// OpenCAFor parses arg as a polecat's <rig>/<name> and opens the CA that
// is to certify it.
func (a *App) OpenCAFor(arg string) (wire.Identity, *pki.CA, error) {
	id, err := wire.ParseIdentity(arg)
	if err != nil {
		return wire.Identity{}, nil, err
	}
	c, err := a.OpenCA()
	return id, c, err
}

// FileExists reports whether there is a file at p.
func FileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
