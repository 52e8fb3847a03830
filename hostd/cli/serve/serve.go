// Package serve holds hostd serve, the daemon, and its settings (Settings),
// which hostd config show loads as serve does.
package serve

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/polecat-sidecar/sidecar/hostd/cli/command"
	"github.com/polecat-sidecar/sidecar/hostd/data"
	"github.com/polecat-sidecar/sidecar/hostd/sandbox/runtimes"
	"github.com/polecat-sidecar/sidecar/hostd/server"
	"github.com/polecat-sidecar/sidecar/internal/cli"
	"github.com/polecat-sidecar/sidecar/internal/settings"
)

// serveOptions are hostd serve's settings.
type serveOptions struct {
	*command.App
	serve *Settings
}

// NewServeCmd is hostd serve.
func NewServeCmd(a *command.App) *cobra.Command {
	o := &serveOptions{App: a, serve: NewSettings()}
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the daemon: accept polecat tunnels on UDP and TCP, serve the control socket",
		Long: `Run the daemon. It listens for tunnels on one port, QUIC on UDP and TLS+yamux
on TCP (default :9876, Gas Town's proxy port), and serves the CLI on the unix
socket <town>/.runtime/hostd/hostd.sock. The CA must exist ('hostd ca init').
Stop it with SIGINT or SIGTERM.

Every setting is checked at start: a config key or HOSTD_* variable that
names no setting, a duration without a unit, a value out of its range or
two that do not fit together stop hostd with the key, the value, where it
came from and what it must be. 'hostd config show' prints what serve would
run with.`,
		Args: cobra.NoArgs,
		RunE: o.run,
	}
	a.Register(cmd.Flags(), o.serve.Table)
	return cmd
}

func (o *serveOptions) run(cmd *cobra.Command, _ []string) error {
	if err := o.serve.Load(o.App, cmd.Flags()); err != nil {
		return err
	}
	cfg := o.serve.cfg
	cfg.Version, cfg.Logger = cli.Version(), slog.Default()
	rt, err := runtimes.New(o.serve.rt)
	if err != nil {
		return fmt.Errorf("starting hostd: %w", err)
	}
	cfg.SandboxRuntime = rt
	setServeGC()
	s, err := server.New(cfg)
	if err != nil {
		return fmt.Errorf("starting hostd: %w", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	return s.Run(ctx)
}

// Settings is what hostd serve runs with, as its settings fill it.
type Settings struct {
	cfg    server.Config
	gt, bd string          // the relayed binaries
	rt     runtimes.Config // the sandboxes' runtime, which serve's reaper removes them with
	// Table is every setting of serve (serveSettings), at its default
	// until loaded.
	Table []settings.Setting
}

// NewSettings is serve's settings at their defaults.
func NewSettings() *Settings {
	c := &Settings{cfg: server.DefaultConfig(), rt: runtimes.DefaultConfig()}
	c.Table = serveSettings(&c.cfg, &c.gt, &c.bd, &c.rt)
	return c
}

// Config is serve's configuration as Load left it (but its
// SandboxRuntime, which serve builds from Runtime).
func (c *Settings) Config() server.Config { return c.cfg }

// Runtime is the sandboxes' runtime and its settings, as Load left them.
func (c *Settings) Runtime() runtimes.Config { return c.rt }

// Load reads the settings from fs (serve's flags, or config show's),
// the environment and the config file, and checks them all, as
// server.New would not: a zero given where zero is out of range (New
// takes it as the default) is refused, and every error names the
// setting, its value and where it came from.
func (c *Settings) Load(a *command.App, fs *pflag.FlagSet) error {
	settings.Bind(fs, a.Viper, c.Table) // serve and config show share every key, run and nuke sandbox.runtime
	if err := settings.Load(a.Viper, c.Table); err != nil {
		return err
	}
	c.cfg.Relay.Binaries = map[string]string{"gt": c.gt, "bd": c.bd}
	c.cfg.Town, c.cfg.TrustDomain = a.Town(), a.Viper.GetString("trust_domain")
	err := errors.Join(settings.Explain(c.cfg.Validate(), &c.cfg, c.Table, a.Where(fs)), settings.Explain(c.rt.Validate(), &c.rt, c.Table, a.Where(fs)))
	if err != nil {
		return fmt.Errorf("hostd serve's settings:\n%w", err)
	}
	return nil
}

// serveSettings is every setting of hostd serve: its flag, its key in
// HOSTD_* variables and config.yaml, and the field of cfg it fills, whose
// value (from server.DefaultConfig) is the default. gt and bd receive the
// relayed binaries' paths, and rt the sandboxes' runtime.
func serveSettings(cfg *server.Config, gt, bd *string, rt *runtimes.Config) []settings.Setting {
	return append([]settings.Setting{
		{Key: "listen", Flag: "listen", Usage: "tunnel address, UDP and TCP", Value: &cfg.Listen},
		{Key: "server_names", Flag: "server-name", Usage: "extra DNS name or IP for hostd's certificate (repeatable)", Value: &cfg.Certs.ServerNames},
		{Key: "cert_ttl", Flag: "cert-ttl", Usage: "lifetime of certificates issued on join and renewal", Value: &cfg.Certs.TTL},
		{Key: "keepalive", Flag: "keepalive", Usage: "how often an idle tunnel is pinged, below --idle-timeout (0: half the idle timeout, at most 5s)", Value: &cfg.Tunnel.KeepAlive},
		{Key: "idle_timeout", Flag: "idle-timeout", Usage: "close a tunnel after this long without hearing from the agent", Value: &cfg.Tunnel.IdleTimeout},
		{Key: "max_streams", Flag: "max-streams", Usage: "concurrent streams per polecat (across its tunnels), each direction", Value: &cfg.Tunnel.MaxStreams},
		{Key: "max_tunnels", Flag: "max-tunnels", Usage: "tunnels one polecat may hold, current and draining; a newer one closes the oldest", Value: &cfg.Registry.MaxTunnels},
		{Key: "max_handshakes", Flag: "max-handshakes", Usage: "TCP handshakes (and joins) in progress at once; more are closed unanswered", Value: &cfg.Tunnel.MaxHandshakes},
		{Key: "max_handshakes_per_source", Flag: "max-handshakes-per-source", Usage: "of those, from one IP address", Value: &cfg.Tunnel.MaxHandshakesPerSource},
		{Key: "renewals_per_hour", Flag: "renewals-per-hour", Usage: "certificate renewals one polecat may get per hour", Value: &cfg.Certs.RenewalsPerHour},
		{Key: "relay.gt", Flag: "relay-gt", Usage: "the host's gt binary (default: gt on PATH)", Value: gt},
		{Key: "relay.bd", Flag: "relay-bd", Usage: "the host's bd binary (default: bd on PATH)", Value: bd},
		{Key: "relay.allow", Usage: "map of command to allowed subcommands (each with hostd's argument grammar)", Value: &cfg.Relay.Policy.Allow},
		{Key: "relay.env", Usage: "base environment of relayed commands", Value: &cfg.Relay.Env},
		{Key: "relay.max_concurrent", Flag: "relay-max-concurrent", Usage: "relayed commands one polecat may run at once", Value: &cfg.Relay.MaxConcurrent},
		{Key: "relay.queue_wait", Flag: "relay-queue-wait", Usage: "how long a command over that limit waits before it is refused", Value: &cfg.Relay.QueueWait},
		{Key: "relay.commands_per_minute", Flag: "relay-commands-per-minute", Usage: "relayed commands one polecat may start per minute (that many at once, then evenly); more are refused", Value: &cfg.Relay.CommandsPerMinute},
		{Key: "relay.timeout", Flag: "relay-timeout", Usage: "kill relayed commands running longer than this (0: no limit)", Value: &cfg.Relay.Timeout},
		{Key: "relay.max_stdin_buffer", Flag: "relay-max-stdin-buffer", Usage: "bytes of stdin held for a command that has not read them yet", Value: &cfg.Relay.MaxStdinBuffer},
		{Key: "relay.stdin_stall", Flag: "relay-stdin-stall", Usage: "kill a command that reads none of a full stdin buffer for this long", Value: &cfg.Relay.StdinStall},
		{Key: "relay.allow_unconfined", Flag: "relay-allow-unconfined", Usage: "relay even where the kernel cannot confine relayed commands (no Landlock, no sandbox-exec): a grammar mistake would then let a polecat act as you", Value: &cfg.Relay.AllowUnconfined},
		{Key: "git.refresh_age", Flag: "git-refresh-age", Usage: "refresh a rig's .repo.git from origin before a fetch when older than this (negative, e.g. -1s: never)", Value: &cfg.Git.RefreshAge},
		{Key: "git.refresh_timeout", Flag: "git-refresh-timeout", Usage: "give up refreshing from origin after this and serve what is there", Value: &cfg.Git.RefreshTimeout},
		{Key: "git.branches", Usage: "map of rig to its polecats' branch patterns", Value: &cfg.Git.Branches},
		{Key: "git.polecats", Usage: "map of rig to polecat names known beside those issued certificates", Value: &cfg.Git.Polecats},
		{Key: "git.upstream", Flag: "git-upstream", Usage: "push branches that polecats push to the rig's origin, queued and retried", Value: &cfg.Upstream},
		{Key: "git.upstream_retry", Flag: "git-upstream-retry", Usage: "first retry delay of a failed upstream push (doubling up to 5m)", Value: &cfg.UpstreamConfig.MinBackoff},
		{Key: "git.upstream_batch", Flag: "git-upstream-batch", Usage: "branches of one polecat per upstream push; polecats take turns", Value: &cfg.UpstreamConfig.Batch},
		{Key: "git.upstream_max_per_polecat", Flag: "git-upstream-max-per-polecat", Usage: "branches one polecat may have queued for upstream", Value: &cfg.UpstreamConfig.MaxPerPolecat},
		{Key: "git.reconcile", Flag: "git-reconcile", Usage: "compare polecat branches with origin and queue those that differ this often (negative: never)", Value: &cfg.Git.Reconcile},
		{Key: "git.max_processes", Flag: "git-max-processes", Usage: "git processes serving polecats at once", Value: &cfg.Git.MaxProcesses},
		{Key: "git.max_processes_per_polecat", Flag: "git-max-processes-per-polecat", Usage: "of those, for one polecat", Value: &cfg.Git.MaxProcessesPerPolecat},
		{Key: "git.process_wait", Flag: "git-process-wait", Usage: "how long a git request over those limits waits before it is refused (503)", Value: &cfg.Git.ProcessWait},
		{Key: "git.idle_timeout", Flag: "git-idle-timeout", Usage: "end a git request whose upload or download makes no progress this long", Value: &cfg.Git.IdleTimeout},
		{Key: "git.max_push_size", Flag: "git-max-push-size", Usage: "largest pack one push may send, bytes (receive.maxInputSize)", Value: &cfg.Git.MaxPushSize},
		{Key: "git.max_checkout_size", Flag: "git-max-checkout-size", Usage: "most bytes a push may make git write into a host worktree where its branch is checked out (the new tree's blob sizes, times what its .gitattributes may grow them)", Value: &cfg.Git.MaxCheckoutSize},
		{Key: "git.max_checkout_files", Flag: "git-max-checkout-files", Usage: "most files, links and directories in the tree a push makes git check out into a host worktree", Value: &cfg.Git.MaxCheckoutFiles},
		{Key: "git.worktree_guard", Flag: "git-worktree-guard", Usage: "what a push gets whose checkout in a host worktree would change what host processes run or follow there (a symlink leaving it; .beads, .githooks, its core.hooksPath): refuse (the push, naming the paths) or skip (it lands, the worktree is not updated)", Value: &cfg.Git.WorktreeGuard},
		{Key: "sync.roots", Usage: "map of rig to its polecats' data root on the host, {name} for the polecat; without {name} the rig's polecats share one root (default " + data.DefaultRoot + ")", Value: &cfg.Data.Roots},
		{Key: "sync.include", Usage: "paths under a data root that cross between host and container", Value: &cfg.Data.Include},
		{Key: "sync.rig_roots", Usage: "map of rig to the directory on the host whose files all its polecats share, read-only (default " + data.DefaultRigRoot + ")", Value: &cfg.Data.RigRoots},
		{Key: "sync.rig_include", Usage: "paths under a rig's root that go into each of its polecats' containers and never come back (none may meet sync.include)", Value: &cfg.Data.RigInclude},
		{Key: "sync.exclude", Usage: "patterns never to cross, beside the built-in blacklist of secrets", Value: &cfg.Data.Exclude},
		{Key: "sync.agent_transfers_per_hour", Flag: "sync-agent-transfers-per-hour", Usage: "data transfers (fetches, uploads) one polecat's agent may start per hour", Value: &cfg.Data.AgentTransfersPerHour},
		{Key: "sync.max_bytes", Flag: "sync-max-bytes", Usage: "largest total of files one archive from a container may hold", Value: &cfg.Data.MaxBytes},
		{Key: "sync.max_files", Flag: "sync-max-files", Usage: "most entries one archive from a container may hold", Value: &cfg.Data.MaxFiles},
		{Key: "sync.max_file_size", Flag: "sync-max-file-size", Usage: "largest file one archive from a container may hold", Value: &cfg.Data.MaxFileSize},
		{Key: "sync.max_ratio", Flag: "sync-max-ratio", Usage: "most decompressed bytes per compressed byte of an archive from a container", Value: &cfg.Data.MaxRatio},
		{Key: "sync.max_manifest_bytes", Flag: "sync-max-manifest-bytes", Usage: "largest manifest (the list of entries) an archive from a container may hold", Value: &cfg.Data.MaxManifestBytes},
		{Key: "sync.max_stored_bytes", Flag: "sync-max-stored-bytes", Usage: "most bytes hostd stores for one polecat (its data root's files that cross, conflict copies, its base); a transfer over it is refused", Value: &cfg.Data.MaxStoredBytes},
		{Key: "sync.max_conflicts", Flag: "sync-max-conflicts", Usage: "most paths changed on both sides one transfer merges (each a git merge-file run or a conflict copy); more refuses the transfer", Value: &cfg.Data.MaxConflicts},
		{Key: "sync.max_delete_share", Flag: "sync-max-delete-share", Usage: "hold a transfer until 'hostd sync pull --allow-deletes' when the container would then have taken away more than this share (0 to 1) of the files hostd last confirmed for the polecat, counted over transfers; 1 turns the hold off", Value: &cfg.Data.MaxDeleteShare},
		{Key: "sync.merge_processes", Flag: "sync-merge-processes", Usage: "git merge-file processes running at once, across polecats", Value: &cfg.Data.MergeProcesses},
		{Key: "nudge.ttl", Flag: "nudge-ttl", Usage: "how long a normal nudge may wait to be delivered", Value: &cfg.Nudge.TTL},
		{Key: "nudge.urgent_ttl", Flag: "nudge-urgent-ttl", Usage: "how long an urgent nudge may wait to be delivered", Value: &cfg.Nudge.UrgentTTL},
		{Key: "nudge.depth", Flag: "nudge-depth", Usage: "nudges queued per polecat; past it the oldest normal one is dropped", Value: &cfg.Nudge.Depth},
		{Key: "nudge.attempt", Flag: "nudge-attempt", Usage: "how long one delivery attempt waits for the polecat to be idle before hostd offers the nudge again", Value: &cfg.Nudge.Attempt},
		{Key: "sandbox.reap", Flag: "sandbox-reap", Usage: "how often to remove the sandboxes of polecats Gas Town has nuked (their directory gone), revoking their certificates (0: never)", Value: &cfg.SandboxReap},
		{Key: "admin_listen", Flag: "admin-listen", Usage: "also serve gt-proxy-server's admin API (issue-cert, deny-cert, health) over plain HTTP at this loopback address, where Gas Town's admin client calls it (127.0.0.1:9877); any local user, and on Docker Desktop any container, can issue certificates there (off when empty)", Value: &cfg.AdminListen},
		{Key: "metrics_listen", Flag: "metrics-listen", Usage: "serve Prometheus metrics at http://<addr>/metrics and Go profiles at /debug/pprof/ (off when empty)", Value: &cfg.MetricsListen},
		{Key: "liveness.beat_interval", Flag: "beat-interval", Usage: "how often agents beat (set the agents' --beat-interval to match)", Value: &cfg.Liveness.Thresholds.Interval},
		{Key: "liveness.stale_beats", Flag: "stale-beats", Usage: "intervals without a beat, tunnel up, before a polecat is stale", Value: &cfg.Liveness.Thresholds.StaleBeats},
		{Key: "liveness.idle_after", Flag: "idle-after", Usage: "time without output in the session's pane before a running polecat is idle", Value: &cfg.Liveness.Thresholds.IdleAfter},
		{Key: "liveness.grace", Flag: "grace", Usage: "time disconnected before a polecat is dead; also how long a sandbox's agent may wait for its first session", Value: &cfg.Liveness.Thresholds.Grace},
		{Key: "liveness.state_logs", Flag: "state-logs", Usage: "state-change log lines per polecat per minute (the rest are counted)", Value: &cfg.Liveness.StateLogs},
	}, runtimes.Settings(rt, "sandbox-runtime")...)
}
