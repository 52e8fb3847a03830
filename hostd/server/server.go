// Package server is hostd's thin core: it opens the CA, builds each
// service (registry, certificates, liveness, relay, git, upstream, data,
// nudge, pane, hostd run's failed starts) from its Config, wires them
// together, accepts tunnels on one port (QUIC and TCP), gives each stream
// to the service for its kind, and hands the services to the control API
// (hostd/control) as they are.
package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/polecat-sidecar/sidecar/hostd/certs"
	"github.com/polecat-sidecar/sidecar/hostd/control"
	"github.com/polecat-sidecar/sidecar/hostd/data"
	"github.com/polecat-sidecar/sidecar/hostd/git"
	"github.com/polecat-sidecar/sidecar/hostd/liveness"
	"github.com/polecat-sidecar/sidecar/hostd/nudge"
	"github.com/polecat-sidecar/sidecar/hostd/pane"
	"github.com/polecat-sidecar/sidecar/hostd/pki"
	"github.com/polecat-sidecar/sidecar/hostd/registry"
	"github.com/polecat-sidecar/sidecar/hostd/relay"
	"github.com/polecat-sidecar/sidecar/hostd/sandbox"
	"github.com/polecat-sidecar/sidecar/hostd/state"
	"github.com/polecat-sidecar/sidecar/hostd/upstream"
	"github.com/polecat-sidecar/sidecar/internal/settings"
	"github.com/polecat-sidecar/sidecar/tunnel"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// Config is what the daemon needs to run: its own settings and each
// service's Config. Zero fields take the services' defaults (Upstream
// false means off); DefaultConfig has them all, for flags to show.
type Config struct {
	// Town is the Gas Town root (the CA and the runtime directory live
	// under it).
	Town string
	// Listen is the tunnel address, UDP and TCP.
	Listen string
	// TrustDomain is the SPIFFE trust domain of polecat identities.
	TrustDomain string
	// Tunnel tunes the sessions.
	Tunnel tunnel.Config
	// Registry tunes the registry of live sessions.
	Registry registry.Config
	// Certs tunes certificate issuing (Revoked is wired here).
	Certs certs.Config
	// Liveness tunes judging (Path is filled in).
	Liveness liveness.Config
	// Relay configures the gt/bd relay (Town and Logger are filled in).
	Relay relay.Config
	// Git configures the git service (Town, HooksDir, TempDir, Upstream,
	// KnownPolecats and Logger are filled in).
	Git git.Config
	// Data configures the data channel (Town, Dir and Logger are filled
	// in).
	Data data.Config
	// Nudge configures the nudge queue (Path and Logger are filled in).
	Nudge nudge.Config
	// Upstream turns on pushing landed branches to each rig's origin.
	Upstream bool
	// UpstreamConfig tunes the upstream queue.
	UpstreamConfig upstream.Config
	// MetricsListen, when set, is where Prometheus metrics are served.
	MetricsListen string
	// AdminListen, when set, is a loopback address where gt-proxy-server's
	// admin API (issue-cert, deny-cert, health) is also served over plain
	// HTTP, for Gas Town's admin client (127.0.0.1:9877); off when empty.
	AdminListen string
	// SandboxRuntime is the runtime (docker, podman, kubernetes: serve
	// builds it with hostd/sandbox/runtimes) whose sandboxes of this town
	// ('hostd run') are removed once Gas Town has nuked their polecat;
	// SandboxReap is how often that is checked (0: never).
	SandboxRuntime sandbox.Runtime
	SandboxReap    time.Duration
	// Version is reported to agents and by status.
	Version string
	// Logger receives structured logs.
	Logger *slog.Logger
}

// DefaultConfig is every service's defaults, listening on Gas Town's
// proxy port, pushing upstream. Town, MetricsListen and AdminListen have
// no default.
func DefaultConfig() Config {
	return Config{
		Listen:         fmt.Sprintf(":%d", wire.DefaultPort),
		TrustDomain:    wire.DefaultTrustDomain,
		Tunnel:         tunnel.DefaultConfig(),
		Registry:       registry.DefaultConfig(),
		Certs:          certs.DefaultConfig(),
		Liveness:       liveness.DefaultConfig(),
		Relay:          relay.DefaultConfig(),
		Git:            git.DefaultConfig(),
		Data:           data.DefaultConfig(),
		Nudge:          nudge.DefaultConfig(),
		Upstream:       true, // for the flag only: New takes a false Upstream as off
		UpstreamConfig: upstream.DefaultConfig(),
		SandboxRuntime: sandbox.CLI{Bin: "docker"},
		SandboxReap:    30 * time.Second,
		Version:        "dev",
		Logger:         slog.Default(),
	}
}

// Validate names every field out of its range, this Config's and each
// service's, by its path (Certs.TTL, Liveness.Thresholds.Grace), as
// settings.FieldErrors. A zero field counts as given: hostd serve checks
// its settings with it before New, which would take a zero as the
// default, so that a zero the operator gave is refused where it is out of
// range. The fields New fills in (each service's Town, paths, Logger) are
// required here too; settings.Explain leaves those to New.
func (c Config) Validate() error {
	return errors.Join(
		c.validateOwn(),
		settings.Under("Registry", c.Registry.Validate()),
		settings.Under("Certs", c.Certs.Validate()),
		settings.Under("Liveness", c.Liveness.Validate()),
		settings.Under("Relay", c.Relay.Validate()),
		settings.Under("Git", c.Git.Validate()),
		settings.Under("Data", c.Data.Validate()),
		settings.Under("Nudge", c.Nudge.Validate()),
		settings.Under("UpstreamConfig", c.UpstreamConfig.Validate()),
	)
}

// validateOwn names this Config's own fields out of range, the Tunnel's
// among them; New calls it once zero fields have their defaults, and each
// service's New checks that service's Config.
func (c Config) validateOwn() error {
	var admin error
	if c.AdminListen != "" {
		if err := control.CheckLoopback(c.AdminListen); err != nil {
			admin = settings.Invalid("AdminListen", c.AdminListen, err)
		}
	}
	return errors.Join(
		settings.Required("Town", c.Town),
		settings.Under("Tunnel", c.Tunnel.Validate()),
		admin,
		settings.AtLeast("SandboxReap", c.SandboxReap, 0),
	)
}

// Server is a running hostd.
type Server struct {
	cfg     Config
	log     *slog.Logger
	dir     state.Dir
	started time.Time

	reg   *registry.Registry
	certs *certs.Service
	live  *liveness.Service
	relay *relay.Service
	git   *git.Service
	queue *upstream.Queue
	data  *data.Service
	nudge *nudge.Service
	pane  *pane.Service
	// sandboxes carries hostd run's operations in polecats' sandboxes.
	sandboxes *sandbox.Streams
	// starts are hostd run's failed starts, which status shows.
	starts *sandbox.Starts

	mux     *tunnel.ServeMux
	metrics *metrics
	ln      atomic.Pointer[tunnel.Listener]
}

// New opens the CA and builds the services; Run starts them. Zero Config
// fields (and zero Tunnel fields) take DefaultConfig's, except Upstream
// and SandboxReap: false is off, 0 never.
func New(cfg Config) (*Server, error) {
	def := DefaultConfig()
	def.Upstream = false // FillZero cannot tell a false Upstream from an unset one
	def.SandboxReap = 0  // nor a 0 meaning never
	settings.FillZero(&cfg, def)
	settings.FillZero(&cfg.Tunnel, def.Tunnel)
	if err := cfg.validateOwn(); err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	ca, err := pki.Open(pki.Dir(cfg.Town), cfg.TrustDomain)
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, log: cfg.Logger, dir: state.For(cfg.Town), started: time.Now()}
	cfg.Registry.Logger = cfg.Logger
	if s.reg, err = registry.New(cfg.Registry); err != nil {
		return nil, err
	}
	cfg.Liveness.Path, cfg.Liveness.Logger = s.dir.Liveness(), cfg.Logger
	if s.live, err = liveness.New(cfg.Liveness, s.reg); err != nil {
		return nil, err
	}
	cfg.Certs.Revoked, cfg.Certs.Logger = s.live.Revoke, cfg.Logger
	if s.certs, err = certs.New(ca, s.reg, cfg.Certs); err != nil {
		return nil, err
	}
	if cfg.Upstream {
		if s.queue, err = upstream.Open(cfg.Town, s.dir.Upstream(), cfg.UpstreamConfig, cfg.Logger); err != nil {
			return nil, err
		}
	}
	gcfg := cfg.Git
	gcfg.Town, gcfg.HooksDir, gcfg.TempDir, gcfg.Logger = cfg.Town, s.dir.Hooks(), s.dir.Landed(), cfg.Logger
	if s.queue != nil {
		gcfg.Upstream = s.queue // a nil *Queue in the interface would not be nil
	}
	gcfg.KnownPolecats = ca.KnownNames
	if s.git, err = git.New(gcfg); err != nil {
		return nil, err
	}
	cfg.Relay.Town, cfg.Relay.Logger = cfg.Town, cfg.Logger
	panes := &sandbox.Panes{Dir: s.dir.Panes()}
	cfg.Relay.Cycle = func(ctx context.Context, id wire.Identity) {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		switch err := panes.Respawn(ctx, id, s.log); {
		case errors.Is(err, sandbox.ErrNoPane):
			s.log.Info("gt handoff --cycle saved the state; no hostd run pane to respawn (the session is not in a sandbox of hostd run)", "polecat", id)
		case err != nil:
			s.log.Warn("gt handoff --cycle saved the state; respawning the session failed", "polecat", id, "err", err)
		default:
			s.log.Info("gt handoff --cycle: respawned the polecat's pane; its next session starts in the same sandbox", "polecat", id)
		}
	}
	rel, err := relay.New(cfg.Relay)
	if err != nil {
		return nil, err
	}
	s.relay = rel
	cfg.Data.Town, cfg.Data.Dir, cfg.Data.Logger = cfg.Town, s.dir.Data(), cfg.Logger
	if s.data, err = data.New(cfg.Data, s.reg); err != nil {
		return nil, err
	}

	cfg.Nudge.Path, cfg.Nudge.Logger = s.dir.Nudges(), cfg.Logger
	if s.nudge, err = nudge.New(cfg.Nudge, s.reg); err != nil {
		return nil, err
	}
	s.pane = pane.New(s.reg)
	s.sandboxes = sandbox.NewStreams(s.reg)
	s.starts = &sandbox.Starts{Dir: s.dir.StartFailures(), Town: cfg.Town, Logger: cfg.Logger}
	s.mux = tunnel.NewServeMux()
	s.mux.Handle(wire.KindCert, s.certs)
	s.mux.HandleFunc(wire.KindPing, servePing)
	s.mux.Handle(wire.KindHeartbeat, s.live)
	s.mux.Handle(wire.KindRelay, s.relay)
	s.mux.Handle(wire.KindGit, s.git.Handler())
	s.mux.Handle(wire.KindSync, s.data)
	sources := []collectorSource{s.reg, s.certs, s.live, s.relay, s.git, s.data, s.nudge, listenerMetrics{s}}
	if s.queue != nil {
		sources = append(sources, s.queue)
	}
	s.metrics = newMetrics(sources...)
	return s, nil
}

// services are the services the control API calls.
func (s *Server) services(ln *tunnel.Listener) control.Services {
	svc := control.Services{
		Daemon:   control.Daemon{Version: s.cfg.Version, Started: s.started, Listener: ln},
		Polecats: s.live, Certs: s.certs, Data: s.data, Nudges: s.nudge, Panes: s.pane, Sandboxes: s.sandboxes, Relay: s.relay, Starts: s.starts, Forget: s,
	}
	if s.queue != nil {
		svc.Upstream = s.queue // a nil *Queue in the interface would not be nil
	}
	return svc
}

// listener is the tunnel listener once Run has started, else nil.
func (s *Server) listener() *tunnel.Listener { return s.ln.Load() }

// serveSession serves sess's streams until it ends or ctx does. When ctx
// ends the session is closed first, telling the agent to reconnect at once,
// and ending the handlers Serve waits for; the polecat's last known state
// stays as it was.
func (s *Server) serveSession(ctx context.Context, sess *tunnel.Session) {
	c := s.reg.Add(sess)
	s.certs.Admitted(c)
	stop := context.AfterFunc(ctx, func() { _ = sess.CloseWithReason("hostd shutting down") })
	defer stop()
	err := sess.Serve(ctx, s.metrics.countStreams(s.mux))
	if ctx.Err() != nil {
		return
	}
	s.reg.Remove(c, err)
}

// servePing echoes, for tests and benchmarks of the tunnel through hostd.
func servePing(_ context.Context, st *tunnel.Stream) {
	buf := make([]byte, 32<<10)
	for {
		n, err := st.Read(buf)
		if n > 0 {
			if _, werr := st.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			_ = st.CloseWrite()
			return
		}
	}
}
