package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/viper"

	"github.com/polecat-sidecar/sidecar/agent/creds"
	"github.com/polecat-sidecar/sidecar/agent/data"
	"github.com/polecat-sidecar/sidecar/agent/forward"
	"github.com/polecat-sidecar/sidecar/agent/git"
	"github.com/polecat-sidecar/sidecar/agent/liveness"
	"github.com/polecat-sidecar/sidecar/agent/nudge"
	"github.com/polecat-sidecar/sidecar/agent/pane"
	"github.com/polecat-sidecar/sidecar/agent/relay"
	"github.com/polecat-sidecar/sidecar/agent/shim"
	"github.com/polecat-sidecar/sidecar/agent/statedir"
	"github.com/polecat-sidecar/sidecar/agent/supervisor"
	"github.com/polecat-sidecar/sidecar/internal/settings"
	"github.com/polecat-sidecar/sidecar/internal/unixsock"
	"github.com/polecat-sidecar/sidecar/tunnel"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

func upCmd(v *viper.Viper) *cobra.Command {
	cfg := defaultUpConfig()
	table := upSettings(&cfg)
	cmd := &cobra.Command{
		Use:   "up [flags] [-- CMD ARGS...]",
		Short: "Connect to hostd, keep the tunnel up, and supervise the polecat's session",
		Long: `Connect to hostd and keep the tunnel up until stopped (SIGINT/SIGTERM).

The first connection must succeed within --connect-timeout; after that a lost
tunnel is retried for ever with exponential backoff and jitter (100ms up to
10s). A certificate hostd refuses (expired, revoked, another CA) ends the
agent with an error, since retrying cannot fix it. The certificate is renewed
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
reports it.`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := settings.Load(v, table); err != nil {
				return err
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

// upSettings is every setting of gt-agent up: its flag (also its config
// file key, and GT_AGENT_<FLAG> in the environment) and the field of c it
// fills, whose value is the default.
func upSettings(c *upConfig) []settings.Setting {
	s := []settings.Setting{
		{Key: "url", Usage: "hostd URL, https://<host>:9876 (env GT_PROXY_URL)", Value: &c.URL},
		{Key: "cert", Usage: "client certificate (env GT_PROXY_CERT; default <state-dir>/client.crt)", Value: &c.Cert},
		{Key: "key", Usage: "client key (env GT_PROXY_KEY; default <state-dir>/client.key)", Value: &c.Key},
		{Key: "ca", Usage: "CA certificate (env GT_PROXY_CA; default <state-dir>/ca.crt)", Value: &c.CA},
		{Key: "state-dir", Usage: "this agent's own directory (locked while it runs): default credential paths, what the data channel last exchanged, delivered nudges", Value: &c.StateDir},
		{Key: "join", Usage: "one-time join token, used when there is no valid certificate yet", Value: &c.Join},
		{Key: "join-file", Usage: "file holding the join token instead (a mounted secret; read only when joining)", Value: &c.JoinFile},
		{Key: "identity", Usage: "<rig>/<name> to join as (default $GT_RIG/$GT_POLECAT)", Value: &c.Identity},
		{Key: "transport", Usage: "auto (QUIC, falling back to TCP), quic or tcp", Value: &c.Supervisor.Transport},
		{Key: "connect-timeout", Usage: "give up if hostd cannot be reached at start for this long", Value: &c.Supervisor.ConnectTimeout},
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
		{Key: "keepalive", Usage: "tunnel keepalive interval", Value: &c.Supervisor.Tunnel.KeepAlive},
		{Key: "idle-timeout", Usage: "reconnect after this long without hearing from hostd", Value: &c.Supervisor.Tunnel.IdleTimeout},
	}
	for i := range s {
		s[i].Flag = s[i].Key
	}
	return s
}

func runUp(ctx context.Context, c *upConfig, command []string) error {
	watchers := 0
	for _, set := range []bool{len(command) > 0, c.Watch.WatchSession != "", c.Watch.WatchProcess != ""} {
		if set {
			watchers++
		}
	}
	if watchers > 1 {
		return errors.New("give one of: -- CMD ARGS, --watch-session, --watch-process")
	}
	addr, serverName, err := parseProxyURL(c.URL)
	if err != nil {
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
	paths := creds.Paths{
		Cert: orDefault(c.Cert, filepath.Join(c.StateDir, "client.crt")),
		Key:  orDefault(c.Key, filepath.Join(c.StateDir, "client.key")),
		CA:   orDefault(c.CA, filepath.Join(c.StateDir, "ca.crt")),
	}
	// A signal first gives the data channel its final upload (when it has
	// anything to send), then stops everything else.
	sigCtx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	ctx, cancelRun := context.WithCancel(ctx)
	defer cancelRun()
	var dataSvc atomic.Pointer[data.Service]
	finished, announced := make(chan struct{}), make(chan struct{})
	defer close(finished)
	go func() {
		select {
		case <-sigCtx.Done():
			if d := dataSvc.Load(); d != nil && ctx.Err() == nil {
				d.Teardown()
			}
			cancelRun()
		case <-finished:
		}
	}()
	go stopPromptly(ctx, finished, announced)

	store, err := creds.Load(paths)
	if err != nil && c.Join == "" && c.JoinFile != "" {
		b, readErr := os.ReadFile(c.JoinFile)
		if readErr != nil {
			return fmt.Errorf("no usable certificate (%v), and the join token file cannot be read: %w", err, readErr)
		}
		c.Join = strings.TrimSpace(string(b))
	}
	if token := c.Join; err != nil && token != "" {
		id, idErr := joinIdentity(c.Identity)
		if idErr != nil {
			return idErr
		}
		slog.Info("no usable certificate; joining with token", "identity", id, "addr", addr, "because", err)
		store, err = creds.Join(ctx, addr, serverName, paths, token, id)
		if err != nil {
			return fmt.Errorf("join: %w", err)
		}
		slog.Info("joined; certificate saved", "cert", paths.Cert, "not_after", store.Leaf().NotAfter)
	} else if err == nil && token != "" {
		slog.Info("already have a valid certificate; --join not needed", "cert", paths.Cert)
	}
	if err != nil {
		return err
	}

	scfg := c.Supervisor
	scfg.Addr, scfg.ServerName, scfg.Creds, scfg.Logger = addr, serverName, store, slog.Default()
	hostOpened := tunnel.NewServeMux()
	scfg.Handler = hostOpened
	sup, err := supervisor.New(scfg)
	if err != nil {
		return err
	}
	dcfg := c.Data
	dcfg.StateDir, dcfg.Logger = c.StateDir, slog.Default()
	if dcfg.Root == "" {
		dcfg.Root = c.Watch.WorkDir
	}
	dsvc, err := data.New(dcfg, sup)
	if err != nil {
		return err
	}
	hostOpened.Handle(wire.KindSync, dsvc)
	dataSvc.Store(dsvc)
	go dsvc.Run(ctx)
	socket := c.Socket
	relayLn, err := unixsock.Listen(socket)
	if errors.Is(err, unixsock.ErrInUse) {
		return fmt.Errorf("another gt-agent already serves %s", socket)
	}
	if err != nil {
		return fmt.Errorf("gt/bd relay socket: %w", err)
	}
	defer relayLn.Close()
	go func() { _ = relay.NewForwarder(sup, c.RelayWait, slog.Default()).Serve(ctx, relayLn) }()
	slog.Info("relaying gt/bd", "socket", socket)

	if addr := c.GitListen; addr != "" {
		admit, err := gitAdmit(c.GitAllowUIDs)
		if err != nil {
			return err
		}
		gitLn, err := net.Listen("tcp", addr)
		if err != nil {
			return fmt.Errorf("git listener: %w", err)
		}
		defer gitLn.Close()
		fw := git.NewForwarder(sup, c.RelayWait, slog.Default())
		fw.Admit = admit
		go func() { _ = fw.Serve(ctx, gitLn) }()
		slog.Info("serving git", "origin", git.Origin(gitLn.Addr().String(), "<rig>"))
	}

	wcfg := c.Watch
	wcfg.Command, wcfg.Logger = command, slog.Default()
	if c.TmuxSocket != "" {
		wcfg.TmuxArgs = []string{"-S", c.TmuxSocket}
	}
	watcher, err := liveness.Start(ctx, wcfg)
	if err != nil {
		return err
	}
	if watchers == 0 {
		slog.Warn("no session to watch: beats will say so and hostd will show this polecat as dead; pass -- CMD, --watch-session or --watch-process")
	}
	if err := serveNudges(ctx, c, hostOpened); err != nil {
		return err
	}
	go (&liveness.Sender{Watcher: watcher, Sessions: sup, Interval: c.BeatInterval, Version: version, Logger: slog.Default()}).Run(ctx)

	err = sup.Run(ctx) // nil on SIGINT/SIGTERM; a *supervisor.FatalError says what to do
	if err == nil && ctx.Err() != nil {
		<-announced
	}
	return err
}

// serveNudges delivers hostd's nudges into the watched session's pane,
// hears Claude Code's hooks on the hook socket, and serves hostd peek and
// attach on that pane.
func serveNudges(ctx context.Context, c *upConfig, mux *tunnel.ServeMux) error {
	socket := orDefault(c.HookSocket, nudge.HookSocketPath(c.Socket))
	hooks := &nudge.Hooks{}
	if ln, err := unixsock.Listen(socket); err != nil {
		slog.Warn("no hook socket: Claude Code's hooks cannot reach the agent, so nudges judge idle from the screen", "socket", socket, "err", err)
	} else {
		go func() {
			if err := hooks.Serve(ctx, ln); err != nil {
				slog.Warn("hook socket stopped; nudges fall back to the screen", "err", err)
			}
		}()
	}
	ncfg := c.Nudge
	ncfg.Session = orDefault(c.Watch.WatchSession, c.Watch.Name)
	ncfg.StateDir, ncfg.Logger = c.StateDir, slog.Default()
	if c.TmuxSocket != "" {
		ncfg.Tmux.Args = []string{"-S", c.TmuxSocket}
	}
	svc, err := nudge.New(ncfg, hooks)
	if err != nil {
		return err
	}
	panes, err := pane.New(pane.Config{Session: ncfg.Session, Tmux: ncfg.Tmux, Logger: slog.Default()})
	if err != nil {
		return err
	}
	mux.Handle(wire.KindNudge, svc)
	mux.Handle(wire.KindPane, panes)
	return nil
}

// shutdownLimit is how long the agent takes at most to stop once told to.
const shutdownLimit = time.Second

// stopPromptly says what stopping closes once ctx is cancelled by a
// signal (then closes announced), and ends the process if stopping takes
// over shutdownLimit. finished is closed when up returns.
func stopPromptly(ctx context.Context, finished <-chan struct{}, announced chan<- struct{}) {
	select {
	case <-ctx.Done():
	case <-finished:
		return
	}
	select {
	case <-finished: // up ended on its own and is cancelling ctx on the way out
		return
	default:
	}
	slog.Info("stopping: closing the tunnel (hostd is told why), the gt/bd socket and the git port; the polecat's tmux session keeps running")
	close(announced)
	select {
	case <-finished:
	case <-time.After(shutdownLimit):
		slog.Warn("stopping took longer than " + shutdownLimit.String() + "; exiting now")
		os.Exit(0)
	}
}

// parseProxyURL turns GT_PROXY_URL (https://<host>[:port]) into a dial
// address and the server name to verify.
func parseProxyURL(raw string) (addr, serverName string, err error) {
	if raw == "" {
		return "", "", errors.New("no hostd URL: set GT_PROXY_URL or --url (https://<host>:9876)")
	}
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "https" || u.Hostname() == "" || u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
		return "", "", fmt.Errorf("hostd URL %q: want https://<host>[:port]", raw)
	}
	port := u.Port()
	if port == "" {
		port = strconv.Itoa(wire.DefaultPort)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return "", "", fmt.Errorf("hostd URL %q: bad port", raw)
	}
	return net.JoinHostPort(u.Hostname(), port), u.Hostname(), nil
}

func joinIdentity(flag string) (wire.Identity, error) {
	if flag == "" {
		rig, name := os.Getenv("GT_RIG"), os.Getenv("GT_POLECAT")
		if rig == "" || name == "" {
			return wire.Identity{}, errors.New("joining needs --identity <rig>/<name> (or GT_RIG and GT_POLECAT)")
		}
		flag = rig + "/" + name
	}
	return wire.ParseIdentity(flag)
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// gitAdmit turns --git-allow-uid into the git port's admission check; nil
// for "any".
func gitAdmit(list []string) (func(net.Conn) error, error) {
	var uids []int
	for _, v := range list {
		if v == "any" {
			return nil, nil
		}
		uid, err := strconv.Atoi(v)
		if err != nil || uid < 0 {
			return nil, fmt.Errorf("--git-allow-uid %q: want a uid, or \"any\"", v)
		}
		uids = append(uids, uid)
	}
	return git.OnlyUIDs(uids...), nil
}
