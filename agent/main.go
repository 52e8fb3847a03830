//go:build linux

// Command gt-agent runs inside every polecat container. 'gt-agent up' holds
// the one mTLS tunnel to hostd (QUIC, or TLS+yamux over TCP when UDP is
// blocked) and carries the polecat's traffic to the host over it. Run
// 'gt-agent --help'.
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"github.com/spf13/viper"

	"github.com/polecat-sidecar/sidecar/agent/shim"
	"github.com/polecat-sidecar/sidecar/internal/cli"
	"github.com/polecat-sidecar/sidecar/internal/exit"
	"github.com/polecat-sidecar/sidecar/internal/logging"
	"github.com/polecat-sidecar/sidecar/internal/termsafe"
)

// stdout and stderr carry what gt-agent itself prints (commands' output,
// errors, logs), escaped. A relayed command's streams (exec, the gt and
// bd links) and the session's command (session-run) are not gt-agent's
// text and pass as they are.
var stdout, stderr = termsafe.NewWriter(os.Stdout), termsafe.NewWriter(os.Stderr)

func main() {
	// Invoked as gt or bd (a symlink to gt-agent): relay the command.
	if name := filepath.Base(os.Args[0]); name == "gt" || name == "bd" {
		sh := shim.Shim{Name: name, Socket: shim.SocketPath(), Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr}
		os.Exit(sh.Run(os.Args[1:]))
	}
	os.Exit(exit.Code(newRoot().Execute(), "gt-agent", stderr))
}

func newRoot() *cobra.Command {
	v := viper.New()
	root := &cobra.Command{
		Use:   "gt-agent",
		Short: "The in-container side of polecat-sidecar: one tunnel to hostd for everything",
		Long: `gt-agent runs in a polecat container and holds one mutually authenticated
tunnel to hostd on the operator's machine: QUIC, or TLS+yamux over TCP when
UDP is blocked (it moves back to QUIC when it can).

Linked as gt or bd, it relays those commands to the host through the
running agent, as the smaller gt program (bin/gt, in the image) does.

It reads the settings Gas Town's proxy client uses: GT_PROXY_URL
(https://<host>:9876), GT_PROXY_CERT, GT_PROXY_KEY and GT_PROXY_CA; flags
and a YAML config file (--config) can set the same.

gt-agent runs in Linux containers only (procfs, tmux, Linux socket options):
it is built for linux/amd64 and linux/arm64, never for macOS, where hostd
runs.` + envHelp(upSettings(new(defaultUpConfig()))),
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       cli.Version(),
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	pf := root.PersistentFlags()
	pf.String("config", "", "YAML config file with any of the flags' keys (url, cert, key, ca, ...)")
	pf.String("log-level", "info", "log level: debug, info, warn, error")
	pf.String("log-format", "text", "log format: text or json")
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error {
		return loadConfig(v, cmd)
	}
	root.AddCommand(newUpCmd(v), newExecCmd(), newSessionRunCmd(), newSessionCmd(), newHookCmd(), cli.VersionCommand("gt-agent"))
	cli.StrictGroups(root)
	return root
}

// loadConfig binds flags, Gas Town's environment names and the config
// file, in that order of precedence.
func loadConfig(v *viper.Viper, cmd *cobra.Command) error {
	if err := v.BindPFlags(cmd.Flags()); err != nil {
		return fmt.Errorf("reading flags: %w", err)
	}
	for k, env := range proxyEnv {
		if err := v.BindEnv(k, env); err != nil {
			return fmt.Errorf("reading %s: %w", env, err)
		}
	}
	v.SetEnvPrefix(envPrefix)
	v.SetEnvKeyReplacer(envKeys)
	v.AutomaticEnv()
	if f := v.GetString("config"); f != "" {
		v.SetConfigFile(f)
		if err := v.ReadInConfig(); err != nil {
			return fmt.Errorf("reading config %s: %w", f, err)
		}
	}
	return logging.SetDefault(stderr, v.GetString("log-level"), v.GetString("log-format"))
}
