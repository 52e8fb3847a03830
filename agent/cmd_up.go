//go:build linux

package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/spf13/viper"

	"github.com/polecat-sidecar/sidecar/agent/data"
	"github.com/polecat-sidecar/sidecar/agent/forward"
	"github.com/polecat-sidecar/sidecar/agent/git"
	"github.com/polecat-sidecar/sidecar/agent/liveness"
	"github.com/polecat-sidecar/sidecar/agent/nudge"
	"github.com/polecat-sidecar/sidecar/agent/shim"
	"github.com/polecat-sidecar/sidecar/agent/statedir"
	"github.com/polecat-sidecar/sidecar/agent/supervisor"
	"github.com/polecat-sidecar/sidecar/internal/parts"
	"github.com/polecat-sidecar/sidecar/internal/settings"
	"github.com/polecat-sidecar/sidecar/tunnel"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

func newUpCmd(v *viper.Viper) *cobra.Command {
	cfg := defaultUpConfig()
	table := upSettings(&cfg)
	cmd := &cobra.Command{
		Use:   "up [flags] [-- CMD ARGS...]",
		Short: "Connect to hostd, keep the tunnel up, and supervise the polecat's session",
		Long: `Connect to hostd and keep the tunnel up until stopped (SIGINT/SIGTERM).

The first connection (and a join) must succeed within --connect-timeout, a
hostd not listening yet being tried again meanwhile; after that a lost
tunnel is retried for ever with exponential backoff and jitter (100ms up to
10s). A certificate hostd refuses (expired, revoked, another CA) ends the
agent with an error saying which, since retrying cannot fix it, and ends
the session the agent started with '-- CMD' (its command could no longer
reach the host). The certificate is renewed
over the tunnel two thirds into its lifetime, with a key made here.

Over the tunnel it serves the gt and bd shims (the small gt program with bd
linked to it, or gt-agent itself linked as gt) on the unix socket --socket,
and git on --git-listen: the container's origin is
http://127.0.0.1:9878/v1/git/<rig>, no certificates needed in git.

A fresh container with no certificate can join with a one-time token:
  gt-agent up --join <token from 'hostd token create'> --identity <rig>/<name>
(or --join-file, a file holding the token, such as a mounted secret).
The key is made here; the certificate, key and CA are written to the
--cert/--key/--ca paths (default under --state-dir).

--state-dir is one agent's alone: the agent locks it while it runs, and a
second agent given the same directory refuses to start.

With '-- CMD ARGS...' the agent starts the polecat's command in a tmux
session (--session, default "polecat") so nudges and 'tmux attach' work;
--watch-session watches an existing tmux session and --watch-process a
process by name instead. Every --beat-interval the agent sends hostd a beat:
the session's state (running, or exited with its code), its process tree's
CPU, memory and threads, the time since its pane last changed, and the
container's load. The agent keeps running after the session ends, and
reports it.` + envHelp(table),
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkNames(cmd.Root(), v); err != nil {
				return err
			}
			if err := settings.Load(v, table); err != nil {
				return err
			}
			where := func(s settings.Setting) settings.Source { return settings.Where(cmd.Flags(), v, envPrefix, s) }
			if err := settings.Explain(cfg.Validate(), &cfg, table, where); err != nil {
				return fmt.Errorf("gt-agent up's settings:\n%w", err)
			}
			return runUp(cmd.Context(), &cfg, args)
		},
	}
	settings.Register(cmd.Flags(), v, table)
	return cmd
}

// upConfig is everything gt-agent up reads from flags, the environment and
// its config file.
type upConfig struct {
	URL, Cert, Key, CA, StateDir, Join, JoinFile, Identity string
	Supervisor                                             supervisor.Config
	Socket                                                 string
	RelayWait                                              time.Duration
	GitListen                                              string
	GitAllowUIDs                                           []string
	Data                                                   data.Config
	Watch                                                  liveness.Config
	TmuxSocket                                             string
	BeatInterval                                           time.Duration
	HookSocket                                             string
	Nudge                                                  nudge.Config
}

// defaultUpConfig takes each default from the package that owns it.
func defaultUpConfig() upConfig {
	return upConfig{
		StateDir:     "/run/gt-agent",
		Supervisor:   supervisor.DefaultConfig(),
		Socket:       shim.DefaultSocket,
		RelayWait:    forward.DefaultWait,
		GitListen:    git.DefaultListen,
		GitAllowUIDs: []string{strconv.Itoa(os.Getuid())},
		Data:         data.Config{Checkpoint: data.DefaultConfig().Checkpoint, Teardown: data.DefaultConfig().Teardown},
		Watch:        liveness.DefaultConfig(),
		BeatInterval: liveness.DefaultInterval,
		Nudge:        nudge.DefaultConfig(),
	}
}

// Validate names each setting of up out of its range, by its field's path
// (Supervisor.Tunnel.KeepAlive), as each service's Validate does. up runs
// it on the values as given, a zero being one the operator gave, before
// anything starts: a join would spend its one-time token first. Fields
// up fills in itself (hostd's address, the credentials) are left to the
// services' New.
func (c upConfig) Validate() error {
	var uids error
	if _, err := gitAdmit(c.GitAllowUIDs); err != nil {
		uids = settings.Invalid("GitAllowUIDs", c.GitAllowUIDs, err)
	}
	return errors.Join(
		settings.Under("Supervisor", c.Supervisor.Validate()),
		settings.Positive("RelayWait", c.RelayWait),
		uids,
		settings.Under("Data", c.Data.Validate()),
		settings.Positive("BeatInterval", c.BeatInterval),
		settings.Under("Nudge", c.Nudge.Validate()),
	)
}

// checkNames refuses a key of up's config file, or a GT_AGENT_*
// variable, that names no flag of any gt-agent command (each flag is a
// setting of that name), naming the nearest one that does.
func checkNames(root *cobra.Command, v *viper.Viper) error {
	var known []settings.Setting
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		for _, fs := range []*pflag.FlagSet{c.LocalNonPersistentFlags(), c.PersistentFlags()} {
			fs.VisitAll(func(f *pflag.Flag) { known = append(known, settings.Setting{Key: f.Name}) })
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	if err := settings.CheckEnv(os.Environ(), envPrefix, known); err != nil {
		return err
	}
	if f := v.ConfigFileUsed(); f != "" {
		keys, err := settings.FileKeys(f)
		if err == nil {
			err = settings.CheckKeys(keys, known)
		}
		if err != nil {
			return fmt.Errorf("config %s:\n%w", f, err)
		}
	}
	return nil
}

// upSettings is every setting of gt-agent up: its flag (also its config
// file key, and GT_AGENT_<FLAG> in the environment) and the field of c it
// fills, whose value is the default.
func upSettings(c *upConfig) []settings.Setting {
	s := []settings.Setting{
		{Key: "url", Usage: "hostd URL, https://<host>:9876 (env GT_PROXY_URL)", Value: &c.URL},
		{Key: "cert", Usage: "client certificate (env GT_PROXY_CERT; default <state-dir>/client.crt)", Value: &c.Cert},
		{Key: "key", Usage: "client key (env GT_PROXY_KEY; default <state-dir>/client.key)", Value: &c.Key},
		{Key: "ca", Usage: "CA certificate (env GT_PROXY_CA; default <state-dir>/ca.crt)", Value: &c.CA},
		{Key: "state-dir", Usage: "this agent's own directory (locked while it runs): default credential paths, what the data channel last exchanged, delivered nudges, whether a session has started", Value: &c.StateDir},
		{Key: "join", Usage: "one-time join token, used when there is no valid certificate yet", Value: &c.Join},
		{Key: "join-file", Usage: "file holding the join token instead (a mounted secret; read only when joining)", Value: &c.JoinFile},
		{Key: "identity", Usage: "<rig>/<name> to join as (default $GT_RIG/$GT_POLECAT)", Value: &c.Identity},
		{Key: "transport", Usage: "auto (QUIC, falling back to TCP), quic or tcp", Value: &c.Supervisor.Transport},
		{Key: "connect-timeout", Usage: "give up if hostd cannot be reached at start for this long (joining too)", Value: &c.Supervisor.ConnectTimeout},
		{Key: "quic-probe", Usage: "while on TCP, try QUIC again this often", Value: &c.Supervisor.ProbeInterval},
		{Key: "socket", Usage: "unix socket where the gt/bd shims reach the agent (env " + shim.SocketEnv + ")", Value: &c.Socket},
		{Key: "relay-wait", Usage: "how long a gt/bd command or git request waits for a tunnel that is down", Value: &c.RelayWait},
		{Key: "git-listen", Usage: "where git reaches the rig's repository: origin is http://<this>" + wire.GitPathPrefix + "<rig> (empty: off)", Value: &c.GitListen},
		{Key: "git-allow-uid", Usage: "uids whose processes may use the git port, which pushes as the polecat (default: gt-agent's own uid; \"any\": no check)", Value: &c.GitAllowUIDs},
		{Key: "data-root", Usage: "the container's data root, where hostd's whitelisted data goes and comes back from (default: --work-dir)", Value: &c.Data.Root},
		{Key: "sync-checkpoint", Usage: "send the data root's whitelisted contents to hostd this often (negative: never)", Value: &c.Data.Checkpoint},
		{Key: "sync-teardown", Usage: "on SIGTERM, give the final upload of the data this long", Value: &c.Data.Teardown},
		{Key: "session", Usage: "tmux session to start the command in", Value: &c.Watch.Name},
		{Key: "watch-session", Usage: "watch this existing tmux session instead of starting one", Value: &c.Watch.WatchSession},
		{Key: "watch-process", Usage: "watch the oldest process of this name instead (no tmux)", Value: &c.Watch.WatchProcess},
		{Key: "tmux-socket", Usage: "tmux server socket path (default: tmux's own)", Value: &c.TmuxSocket},
		{Key: "work-dir", Usage: "directory whose filesystem's free space beats report", Value: &c.Watch.WorkDir},
		{Key: "beat-interval", Usage: "how often to send a heartbeat", Value: &c.BeatInterval},
		{Key: "hook-socket", Usage: "unix socket where 'gt-agent hook' reports Claude Code's hook events (env " + nudge.HookSocketEnv + "; default hooks.sock beside --socket)", Value: &c.HookSocket},
		{Key: "nudge-prompt", Usage: "regular expression for the input line's prompt: a nudge waits until it is empty", Value: &c.Nudge.Prompt},
		{Key: "nudge-busy", Usage: "regular expressions on the screen meaning the polecat is busy (while no hook is heard)", Value: &c.Nudge.BusyPatterns},
		{Key: "nudge-silence", Usage: "with no hook and no prompt seen, the pane counts as idle after this long without output", Value: &c.Nudge.Silence},
		{Key: "keepalive", Usage: "how often an idle tunnel is pinged, below --idle-timeout (0: half the idle timeout, at most 5s)", Value: &c.Supervisor.Tunnel.KeepAlive},
		{Key: "idle-timeout", Usage: "reconnect after this long without hearing from hostd", Value: &c.Supervisor.Tunnel.IdleTimeout},
	}
	for i := range s {
		s[i].Flag = s[i].Key
	}
	return s
}

// upRun is one run of gt-agent up: its settings, the command to start
// in the session, and hostd's address.
type upRun struct {
	*upConfig
	command          []string
	addr, serverName string
}

func runUp(ctx context.Context, cfg *upConfig, command []string) error {
	c := &upRun{upConfig: cfg, command: command}
	if c.watchers() > 1 {
		return errors.New("give one of: -- CMD ARGS, --watch-session, --watch-process")
	}
	var err error
	if c.addr, c.serverName, err = parseProxyURL(c.URL); err != nil {
		return err
	}
	held, err := statedir.Lock(c.StateDir)
	if errors.Is(err, statedir.ErrInUse) {
		return fmt.Errorf("%w: give each agent its own --state-dir (env GT_AGENT_STATE_DIR)", err)
	}
	if err != nil {
		return err
	}
	defer held.Release()
	return runUntilStopped(ctx, c.serve)
}

// watchers counts the ways given to find the session to watch: its
// command, --watch-session, --watch-process.
func (c *upRun) watchers() int {
	n := 0
	for _, set := range []bool{len(c.command) > 0, c.Watch.WatchSession != "", c.Watch.WatchProcess != ""} {
		if set {
			n++
		}
	}
	return n
}

// serve is gt-agent up once its state directory is held: the
// credentials, the tunnel's supervisor and, over it, the data channel,
// the gt/bd relay, git, a sandbox's clone and sessions, the session's
// watcher, nudges and beats, each started (the sandbox's is served) as a
// part of p, which runs them until ctx ends or one fails
// (hostd refusing the agent for good among them). It stores the data
// service in dataSvc as soon as there is one.
func (c *upRun) serve(ctx context.Context, p *parts.Group, dataSvc *atomic.Pointer[data.Service]) error {
	store, err := c.credentials(ctx)
	if err != nil {
		return err
	}
	hostOpened := tunnel.NewServeMux()
	sup, err := c.newSupervisor(store, hostOpened)
	if err != nil {
		return err
	}
	dsvc, err := c.startData(p, sup, hostOpened)
	if err != nil {
		return err
	}
	dataSvc.Store(dsvc)
	if err := c.serveRelay(p, sup); err != nil {
		return err
	}
	gitAddr, err := c.serveGit(p, sup)
	if err != nil {
		return err
	}
	if err := c.serveSandbox(hostOpened, gitAddr); err != nil {
		return err
	}
	watcher, err := c.watch(ctx, p, sup, hostOpened)
	if err != nil {
		return err
	}
	p.Go("tunnel", func(ctx context.Context) error {
		err := sup.Run(ctx) // nil once ctx ends; a *supervisor.FatalError says what to do
		stopIfRefused(watcher, err)
		return err
	})
	return nil
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
