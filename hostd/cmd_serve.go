package main

import (
	"context"
	"fmt"
	"log/slog"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cast"
	"github.com/spf13/cobra"
	"github.com/spf13/viper"

	"github.com/polecat-sidecar/sidecar/heartbeat"
	"github.com/polecat-sidecar/sidecar/hostd/git"
	"github.com/polecat-sidecar/sidecar/hostd/pki"
	"github.com/polecat-sidecar/sidecar/hostd/relay"
	"github.com/polecat-sidecar/sidecar/hostd/server"
	"github.com/polecat-sidecar/sidecar/tunnel"
)

func (a *app) serveCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the daemon: accept polecat tunnels on UDP and TCP, serve the control socket",
		Long: `Run the daemon. It listens for tunnels on one port, QUIC on UDP and TLS+yamux
on TCP (default :9876, Gas Town's proxy port), and serves the CLI on the unix
socket <town>/.runtime/hostd/hostd.sock. The CA must exist ('hostd ca init').
Stop it with SIGINT or SIGTERM.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			v := a.v
			if err := checkSettings(v); err != nil {
				return err
			}
			s, err := server.New(server.Config{
				Town:        a.town(),
				Listen:      v.GetString("listen"),
				TrustDomain: v.GetString("trust_domain"),
				ServerNames: v.GetStringSlice("server_names"),
				CertTTL:     v.GetDuration("cert_ttl"),
				Version:     version,
				Git: git.Config{
					RefreshAge:     v.GetDuration("git.refresh_age"),
					RefreshTimeout: v.GetDuration("git.refresh_timeout"),
				},
				Liveness: heartbeat.Thresholds{
					Interval:   v.GetDuration("liveness.beat_interval"),
					StaleBeats: v.GetInt("liveness.stale_beats"),
					IdleAfter:  v.GetDuration("liveness.idle_after"),
					Grace:      v.GetDuration("liveness.grace"),
				},
				MetricsListen:  v.GetString("metrics_listen"),
				Upstream:       v.GetBool("git.upstream"),
				UpstreamConfig: git.UpstreamConfig{MinBackoff: v.GetDuration("git.upstream_retry")},
				Relay: relay.Config{
					Binaries:      map[string]string{"gt": v.GetString("relay.gt"), "bd": v.GetString("relay.bd")},
					Policy:        relay.Policy{Allow: v.GetStringMapStringSlice("relay.allow")},
					Env:           v.GetStringSlice("relay.env"),
					MaxConcurrent: v.GetInt("relay.max_concurrent"),
					QueueWait:     v.GetDuration("relay.queue_wait"),
					Timeout:       v.GetDuration("relay.timeout"),
				},
				Logger: slog.Default(),
				Tunnel: tunnel.Config{
					KeepAlive:   v.GetDuration("keepalive"),
					IdleTimeout: v.GetDuration("idle_timeout"),
					MaxStreams:  v.GetInt("max_streams"),
				},
			})
			if err != nil {
				return fmt.Errorf("starting hostd: %w", err)
			}
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			return s.Run(ctx)
		},
	}
	f := cmd.Flags()
	def := tunnel.DefaultConfig()
	f.String("listen", fmt.Sprintf(":%d", tunnel.DefaultPort), "tunnel address, UDP and TCP")
	f.StringSlice("server-name", nil, "extra DNS name or IP for hostd's certificate (repeatable)")
	f.Duration("cert-ttl", pki.DefaultTTL, "lifetime of certificates issued on join and renewal")
	f.Duration("keepalive", def.KeepAlive, "tunnel keepalive interval")
	f.Duration("idle-timeout", def.IdleTimeout, "close a tunnel after this long without hearing from the agent")
	f.Int("max-streams", def.MaxStreams, "concurrent streams per polecat, each direction")
	for _, k := range []string{"listen", "cert-ttl", "keepalive", "idle-timeout", "max-streams"} {
		_ = a.v.BindPFlag(key(k), f.Lookup(k))
	}
	_ = a.v.BindPFlag("server_names", f.Lookup("server-name"))
	f.String("relay-gt", "", "the host's gt binary (default: gt on PATH)")
	f.String("relay-bd", "", "the host's bd binary (default: bd on PATH)")
	f.Int("relay-max-concurrent", 8, "relayed commands one polecat may run at once")
	f.Duration("relay-queue-wait", 10*time.Second, "how long a command over that limit waits before it is refused")
	f.Duration("relay-timeout", 0, "kill relayed commands running longer than this (0: no limit)")
	for _, k := range []string{"gt", "bd", "max-concurrent", "queue-wait", "timeout"} {
		_ = a.v.BindPFlag("relay."+key(k), f.Lookup("relay-"+k))
	}
	f.Duration("git-refresh-age", time.Minute, "refresh a rig's .repo.git from origin before a fetch when older than this (negative: never)")
	f.Duration("git-refresh-timeout", 30*time.Second, "give up refreshing from origin after this and serve what is there")
	f.Bool("git-upstream", true, "push branches that polecats push to the rig's origin, queued and retried")
	f.Duration("git-upstream-retry", time.Second, "first retry delay of a failed upstream push (doubling up to 5m)")
	for _, k := range []string{"refresh-age", "refresh-timeout", "upstream", "upstream-retry"} {
		_ = a.v.BindPFlag("git."+key(k), f.Lookup("git-"+k))
	}
	f.String("metrics-listen", "", "serve Prometheus metrics at http://<addr>/metrics (off when empty)")
	_ = a.v.BindPFlag("metrics_listen", f.Lookup("metrics-listen"))
	th := heartbeat.DefaultThresholds()
	f.Duration("beat-interval", th.Interval, "how often agents beat (set the agents' --beat-interval to match)")
	f.Int("stale-beats", th.StaleBeats, "intervals without a beat, tunnel up, before a polecat is stale")
	f.Duration("idle-after", th.IdleAfter, "time without output in the session's pane before a running polecat is idle")
	f.Duration("grace", th.Grace, "time disconnected before a polecat is dead")
	for _, k := range []string{"beat-interval", "stale-beats", "idle-after", "grace"} {
		_ = a.v.BindPFlag("liveness."+key(k), f.Lookup(k))
	}
	return cmd
}

// Settings serve reads as durations, numbers and booleans, whichever of
// flags, environment or config file they come from.
var (
	durationSettings = []string{"cert_ttl", "keepalive", "idle_timeout", "relay.queue_wait", "relay.timeout",
		"git.refresh_age", "git.refresh_timeout", "git.upstream_retry", "liveness.beat_interval", "liveness.idle_after", "liveness.grace"}
	intSettings  = []string{"max_streams", "relay.max_concurrent", "liveness.stale_beats"}
	boolSettings = []string{"git.upstream"}
)

// checkSettings refuses values viper would silently read as zero.
func checkSettings(v *viper.Viper) error {
	for _, k := range durationSettings {
		if _, err := cast.ToDurationE(v.Get(k)); err != nil {
			return fmt.Errorf("setting %s: %v is not a duration (e.g. 30s, 5m)", k, v.Get(k))
		}
	}
	for _, k := range intSettings {
		if _, err := cast.ToIntE(v.Get(k)); err != nil {
			return fmt.Errorf("setting %s: %v is not a whole number", k, v.Get(k))
		}
	}
	for _, k := range boolSettings {
		if _, err := cast.ToBoolE(v.Get(k)); err != nil {
			return fmt.Errorf("setting %s: %v is not true or false", k, v.Get(k))
		}
	}
	return nil
}
