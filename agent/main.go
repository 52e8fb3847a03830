// Command gt-agent runs inside every polecat container. 'gt-agent up' holds
// the one mTLS tunnel to hostd (QUIC, or TLS+yamux over TCP when UDP is
// blocked) and carries the polecat's traffic to the host over it. Run
// 'gt-agent --help'.
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/viper"

	"github.com/polecat-sidecar/sidecar/agent/liveness"
	"github.com/polecat-sidecar/sidecar/agent/nudge"
	"github.com/polecat-sidecar/sidecar/agent/shim"
	"github.com/polecat-sidecar/sidecar/internal/logging"
	"github.com/polecat-sidecar/sidecar/internal/termsafe"
)

// sessionRunCmd is the wrapper gt-agent up starts in the tmux session:
// it runs the polecat's command and records its exit status.
func sessionRunCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:    "session-run --status-file FILE -- CMD ARGS...",
		Short:  "Run the session's command and record its exit status (started by 'gt-agent up')",
		Hidden: true,
		Args:   cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			file, _ := cmd.Flags().GetString("status-file")
			os.Exit(liveness.RunAndRecord(file, args))
			return nil
		},
	}
	cmd.Flags().String("status-file", "", "where to write the exit status")
	_ = cmd.MarkFlagRequired("status-file")
	return cmd
}

// execCmd relays one command explicitly, for when no gt/bd symlink is
// installed or another socket is wanted.
func execCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "exec [--socket PATH] -- gt|bd ARGS...",
		Short: "Relay one gt or bd command to the host (what the gt and bd symlinks do)",
		Long: `Relay one gt or bd command to the host through the running agent, streaming
stdin, stdout and stderr and forwarding SIGINT, SIGTERM and SIGHUP. The exit
status is the host command's (128+signal if a signal ended it), or 255 with
one line on stderr when the command could not be relayed.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			socket, _ := cmd.Flags().GetString("socket")
			sh := shim.Shim{Name: args[0], Socket: socket, Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr}
			os.Exit(sh.Run(args[1:]))
			return nil
		},
	}
	cmd.Flags().String("socket", shim.SocketPath(), "the agent's relay socket (env "+shim.SocketEnv+")")
	return cmd
}

// hookCmd tells the running agent about a Claude Code hook event: the
// image's Claude Code settings run it on UserPromptSubmit, PreToolUse,
// Stop and Notification, so nudges know truthfully when the polecat is
// idle. It never fails Claude Code: a problem is one line on stderr and
// exit status 0.
func hookCmd() *cobra.Command {
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
			socket, _ := cmd.Flags().GetString("socket")
			if err := nudge.SendHook(socket, args[0]); err != nil {
				fmt.Fprintln(cmd.ErrOrStderr(), "gt-agent hook:", err)
			}
			return nil
		},
	}
	cmd.Flags().String("socket", nudge.HookSocketPath(shim.SocketPath()), "the agent's hook socket (env "+nudge.HookSocketEnv+"; default hooks.sock beside the relay socket)")
	return cmd
}

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

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
	if err := newRoot().Execute(); err != nil {
		fmt.Fprintln(stderr, "gt-agent:", err)
		os.Exit(1)
	}
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
and a YAML config file (--config) can set the same.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version,
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
	root.AddCommand(upCmd(v), execCmd(), sessionRunCmd(), hookCmd())
	return root
}

// loadConfig binds flags, Gas Town's environment names and the config
// file, in that order of precedence.
func loadConfig(v *viper.Viper, cmd *cobra.Command) error {
	_ = v.BindPFlags(cmd.Flags())
	for k, env := range map[string]string{"url": "GT_PROXY_URL", "cert": "GT_PROXY_CERT", "key": "GT_PROXY_KEY", "ca": "GT_PROXY_CA"} {
		_ = v.BindEnv(k, env)
	}
	v.SetEnvPrefix("GT_AGENT")
	v.SetEnvKeyReplacer(strings.NewReplacer("-", "_"))
	v.AutomaticEnv()
	if f := v.GetString("config"); f != "" {
		v.SetConfigFile(f)
		if err := v.ReadInConfig(); err != nil {
			return fmt.Errorf("reading config %s: %w", f, err)
		}
	}
	return logging.SetDefault(stderr, v.GetString("log-level"), v.GetString("log-format"))
}
