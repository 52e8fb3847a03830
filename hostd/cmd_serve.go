package main

import (
	"context"
	"fmt"
	"log/slog"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/polecat-sidecar/sidecar/hostd/server"
	"github.com/polecat-sidecar/sidecar/internal/settings"
)

func (a *app) serveCmd() *cobra.Command {
	cfg := server.DefaultConfig()
	var gt, bd string
	table := serveSettings(&cfg, &gt, &bd)
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the daemon: accept polecat tunnels on UDP and TCP, serve the control socket",
		Long: `Run the daemon. It listens for tunnels on one port, QUIC on UDP and TLS+yamux
on TCP (default :9876, Gas Town's proxy port), and serves the CLI on the unix
socket <town>/.runtime/hostd/hostd.sock. The CA must exist ('hostd ca init').
Stop it with SIGINT or SIGTERM.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := settings.Load(a.v, table); err != nil {
				return err
			}
			cfg.Relay.Binaries = map[string]string{"gt": gt, "bd": bd}
			cfg.Town, cfg.Version, cfg.Logger = a.town(), version, slog.Default()
			cfg.TrustDomain = a.v.GetString("trust_domain")
			s, err := server.New(cfg)
			if err != nil {
				return fmt.Errorf("starting hostd: %w", err)
			}
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			return s.Run(ctx)
		},
	}
	settings.Register(cmd.Flags(), a.v, table)
	return cmd
}

// serveSettings is every setting of hostd serve: its flag, its key in
// HOSTD_* variables and config.yaml, and the field of cfg it fills, whose
// value (from server.DefaultConfig) is the default. gt and bd receive the
// relayed binaries' paths.
func serveSettings(cfg *server.Config, gt, bd *string) []settings.Setting {
	return []settings.Setting{
		{Key: "listen", Flag: "listen", Usage: "tunnel address, UDP and TCP", Value: &cfg.Listen},
		{Key: "server_names", Flag: "server-name", Usage: "extra DNS name or IP for hostd's certificate (repeatable)", Value: &cfg.Certs.ServerNames},
		{Key: "cert_ttl", Flag: "cert-ttl", Usage: "lifetime of certificates issued on join and renewal", Value: &cfg.Certs.TTL},
		{Key: "keepalive", Flag: "keepalive", Usage: "tunnel keepalive interval", Value: &cfg.Tunnel.KeepAlive},
		{Key: "idle_timeout", Flag: "idle-timeout", Usage: "close a tunnel after this long without hearing from the agent", Value: &cfg.Tunnel.IdleTimeout},
		{Key: "max_streams", Flag: "max-streams", Usage: "concurrent streams per polecat, each direction", Value: &cfg.Tunnel.MaxStreams},
		{Key: "relay.gt", Flag: "relay-gt", Usage: "the host's gt binary (default: gt on PATH)", Value: gt},
		{Key: "relay.bd", Flag: "relay-bd", Usage: "the host's bd binary (default: bd on PATH)", Value: bd},
		{Key: "relay.allow", Usage: "map of command to allowed subcommands", Value: &cfg.Relay.Policy.Allow},
		{Key: "relay.env", Usage: "base environment of relayed commands", Value: &cfg.Relay.Env},
		{Key: "relay.max_concurrent", Flag: "relay-max-concurrent", Usage: "relayed commands one polecat may run at once", Value: &cfg.Relay.MaxConcurrent},
		{Key: "relay.queue_wait", Flag: "relay-queue-wait", Usage: "how long a command over that limit waits before it is refused", Value: &cfg.Relay.QueueWait},
		{Key: "relay.timeout", Flag: "relay-timeout", Usage: "kill relayed commands running longer than this (0: no limit)", Value: &cfg.Relay.Timeout},
		{Key: "git.refresh_age", Flag: "git-refresh-age", Usage: "refresh a rig's .repo.git from origin before a fetch when older than this (negative, e.g. -1s: never)", Value: &cfg.Git.RefreshAge},
		{Key: "git.refresh_timeout", Flag: "git-refresh-timeout", Usage: "give up refreshing from origin after this and serve what is there", Value: &cfg.Git.RefreshTimeout},
		{Key: "git.branches", Usage: "map of rig to its polecats' branch patterns", Value: &cfg.Git.Branches},
		{Key: "git.polecats", Usage: "map of rig to polecat names known beside those issued certificates", Value: &cfg.Git.Polecats},
		{Key: "git.upstream", Flag: "git-upstream", Usage: "push branches that polecats push to the rig's origin, queued and retried", Value: &cfg.Upstream},
		{Key: "git.upstream_retry", Flag: "git-upstream-retry", Usage: "first retry delay of a failed upstream push (doubling up to 5m)", Value: &cfg.UpstreamConfig.MinBackoff},
		{Key: "metrics_listen", Flag: "metrics-listen", Usage: "serve Prometheus metrics at http://<addr>/metrics (off when empty)", Value: &cfg.MetricsListen},
		{Key: "liveness.beat_interval", Flag: "beat-interval", Usage: "how often agents beat (set the agents' --beat-interval to match)", Value: &cfg.Liveness.Thresholds.Interval},
		{Key: "liveness.stale_beats", Flag: "stale-beats", Usage: "intervals without a beat, tunnel up, before a polecat is stale", Value: &cfg.Liveness.Thresholds.StaleBeats},
		{Key: "liveness.idle_after", Flag: "idle-after", Usage: "time without output in the session's pane before a running polecat is idle", Value: &cfg.Liveness.Thresholds.IdleAfter},
		{Key: "liveness.grace", Flag: "grace", Usage: "time disconnected before a polecat is dead", Value: &cfg.Liveness.Thresholds.Grace},
	}
}
