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
	"syscall"
	"time"

	"github.com/spf13/cast"
	"github.com/spf13/cobra"
	"github.com/spf13/viper"

	"github.com/polecat-sidecar/sidecar/agent/creds"
	"github.com/polecat-sidecar/sidecar/agent/forward"
	"github.com/polecat-sidecar/sidecar/agent/relay"
	"github.com/polecat-sidecar/sidecar/agent/session"
	"github.com/polecat-sidecar/sidecar/agent/supervisor"
	"github.com/polecat-sidecar/sidecar/internal/unixsock"
	"github.com/polecat-sidecar/sidecar/tunnel"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

func upCmd(v *viper.Viper) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "up [flags] [-- CMD ARGS...]",
		Short: "Connect to hostd, keep the tunnel up, and supervise the polecat's session",
		Long: `Connect to hostd and keep the tunnel up until stopped (SIGINT/SIGTERM).

The first connection must succeed within --connect-timeout; after that a lost
tunnel is retried for ever with exponential backoff and jitter (100ms up to
10s). A certificate hostd refuses (expired, revoked, another CA) ends the
agent with an error, since retrying cannot fix it. The certificate is renewed
over the tunnel two thirds into its lifetime, with a key made here.

Over the tunnel it serves the gt and bd shims (symlinks to gt-agent) on the
unix socket --socket, and git on --git-listen: the container's origin is
http://127.0.0.1:9878/v1/git/<rig>, no certificates needed in git.

A fresh container with no certificate can join with a one-time token:
  gt-agent up --join <token from 'hostd token create'> --identity <rig>/<name>
The key is made here; the certificate, key and CA are written to the
--cert/--key/--ca paths (default under --state-dir).

With '-- CMD ARGS...' the agent starts the polecat's command in a tmux
session (--session, default "polecat") so nudges and 'tmux attach' work;
--watch-session watches an existing tmux session and --watch-process a
process by name instead. Every --beat-interval the agent sends hostd a beat:
the session's state (running, or exited with its code), its process tree's
CPU, memory and threads, the time since its pane last changed, and the
container's load. The agent keeps running after the session ends, and
reports it.`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return runUp(cmd.Context(), v, args) },
	}
	f := cmd.Flags()
	def := tunnel.DefaultConfig()
	f.String("url", "", "hostd URL, https://<host>:9876 (env GT_PROXY_URL)")
	f.String("cert", "", "client certificate (env GT_PROXY_CERT; default <state-dir>/client.crt)")
	f.String("key", "", "client key (env GT_PROXY_KEY; default <state-dir>/client.key)")
	f.String("ca", "", "CA certificate (env GT_PROXY_CA; default <state-dir>/ca.crt)")
	f.String("state-dir", "/run/gt-agent", "directory for default credential paths")
	f.String("join", "", "one-time join token, used when there is no valid certificate yet")
	f.String("identity", "", "<rig>/<name> to join as (default $GT_RIG/$GT_POLECAT)")
	f.String("transport", tunnel.TransportAuto, "auto (QUIC, falling back to TCP), quic or tcp")
	f.Duration("connect-timeout", 0, "give up if hostd cannot be reached at start for this long (default 30s)")
	f.Duration("quic-probe", 0, "while on TCP, try QUIC again this often (default 30s)")
	f.String("socket", relay.DefaultSocket, "unix socket where the gt/bd shims reach the agent (env "+relay.SocketEnv+")")
	f.Duration("relay-wait", 10*time.Second, "how long a gt/bd command or git request waits for a tunnel that is down")
	f.String("git-listen", "127.0.0.1:9878", "where git reaches the rig's repository: origin is http://<this>/v1/git/<rig> (empty: off)")
	f.String("session", "polecat", "tmux session to start the command in")
	f.String("watch-session", "", "watch this existing tmux session instead of starting one")
	f.String("watch-process", "", "watch the oldest process of this name instead (no tmux)")
	f.String("tmux-socket", "", "tmux server socket path (default: tmux's own)")
	f.String("work-dir", ".", "directory whose filesystem's free space beats report")
	f.Duration("beat-interval", 5*time.Second, "how often to send a heartbeat")
	f.Duration("keepalive", def.KeepAlive, "tunnel keepalive interval")
	f.Duration("idle-timeout", def.IdleTimeout, "reconnect after this long without hearing from hostd")
	return cmd
}

// upDurations are the settings up reads as durations; viper would read a
// value it cannot parse as zero, silently.
var upDurations = []string{"connect-timeout", "quic-probe", "keepalive", "idle-timeout", "relay-wait", "beat-interval"}

func runUp(ctx context.Context, v *viper.Viper, command []string) error {
	for _, k := range upDurations {
		if _, err := cast.ToDurationE(v.Get(k)); err != nil {
			return fmt.Errorf("setting %s: %v is not a duration (e.g. 30s, 5m)", k, v.Get(k))
		}
	}
	watchers := 0
	for _, set := range []bool{len(command) > 0, v.GetString("watch-session") != "", v.GetString("watch-process") != ""} {
		if set {
			watchers++
		}
	}
	if watchers > 1 {
		return errors.New("give one of: -- CMD ARGS, --watch-session, --watch-process")
	}
	addr, serverName, err := parseProxyURL(v.GetString("url"))
	if err != nil {
		return err
	}
	state := v.GetString("state-dir")
	paths := creds.Paths{
		Cert: orDefault(v.GetString("cert"), filepath.Join(state, "client.crt")),
		Key:  orDefault(v.GetString("key"), filepath.Join(state, "client.key")),
		CA:   orDefault(v.GetString("ca"), filepath.Join(state, "ca.crt")),
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	store, err := creds.Load(paths)
	if token := v.GetString("join"); err != nil && token != "" {
		id, idErr := joinIdentity(v.GetString("identity"))
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

	sup := supervisor.New(supervisor.Config{
		Addr:           addr,
		ServerName:     serverName,
		Creds:          store,
		Transport:      v.GetString("transport"),
		ConnectTimeout: v.GetDuration("connect-timeout"),
		ProbeInterval:  v.GetDuration("quic-probe"),
		Tunnel:         tunnel.Config{KeepAlive: v.GetDuration("keepalive"), IdleTimeout: v.GetDuration("idle-timeout")},
		Logger:         slog.Default(),
	})
	socket := v.GetString("socket")
	relayLn, err := unixsock.Listen(socket)
	if errors.Is(err, unixsock.ErrInUse) {
		return fmt.Errorf("another gt-agent already serves %s", socket)
	}
	if err != nil {
		return fmt.Errorf("gt/bd relay socket: %w", err)
	}
	defer relayLn.Close()
	go func() { _ = relay.NewForwarder(sup, v.GetDuration("relay-wait"), slog.Default()).Serve(ctx, relayLn) }()
	slog.Info("relaying gt/bd", "socket", socket)

	if addr := v.GetString("git-listen"); addr != "" {
		gitLn, err := net.Listen("tcp", addr)
		if err != nil {
			return fmt.Errorf("git listener: %w", err)
		}
		defer gitLn.Close()
		fwd := &forward.Forwarder{Kind: wire.KindGit, Wait: v.GetDuration("relay-wait"), Sessions: sup,
			Unavailable: forward.HTTPUnavailable, Logger: slog.Default()}
		go func() { _ = fwd.Serve(ctx, gitLn) }()
		slog.Info("serving git", "origin", "http://"+gitLn.Addr().String()+"/v1/git/<rig>")
	}

	scfg := session.Config{Name: v.GetString("session"), Command: command, WatchSession: v.GetString("watch-session"),
		WatchProcess: v.GetString("watch-process"), WorkDir: v.GetString("work-dir"), Logger: slog.Default()}
	if sock := v.GetString("tmux-socket"); sock != "" {
		scfg.TmuxArgs = []string{"-S", sock}
	}
	watcher, err := session.Start(ctx, scfg)
	if err != nil {
		return err
	}
	if watchers == 0 {
		slog.Warn("no session to watch: beats will say so and hostd will show this polecat as dead; pass -- CMD, --watch-session or --watch-process")
	}
	go (&session.Sender{Watcher: watcher, Sessions: sup, Interval: v.GetDuration("beat-interval"), Version: version, Logger: slog.Default()}).Run(ctx)

	return sup.Run(ctx) // nil on SIGINT/SIGTERM; a *supervisor.FatalError says what to do
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
