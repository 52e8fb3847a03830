// Package server is the hostd daemon: it terminates polecat tunnels on one
// port (QUIC and TCP), authorizes them against the CA and its revocations,
// keeps the registry of connected polecats, serves the host side of each
// stream kind, and answers the control socket.
package server

import (
	"context"
	"crypto/rand"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/polecat-sidecar/sidecar/heartbeat"
	"github.com/polecat-sidecar/sidecar/hostd/control"
	"github.com/polecat-sidecar/sidecar/hostd/git"
	"github.com/polecat-sidecar/sidecar/hostd/pki"
	"github.com/polecat-sidecar/sidecar/hostd/relay"
	"github.com/polecat-sidecar/sidecar/tunnel"
)

// Config is what the daemon needs to run.
type Config struct {
	// Town is the Gas Town root (the CA lives under it).
	Town string
	// Listen is the tunnel address, UDP and TCP (default ":9876").
	Listen string
	// TrustDomain is the SPIFFE trust domain of polecat identities.
	TrustDomain string
	// ServerNames are extra DNS names and IP addresses for hostd's server
	// certificate, beyond localhost, the host's own names and addresses,
	// and host.docker.internal.
	ServerNames []string
	// CertTTL is the lifetime of certificates issued by joining and
	// renewal.
	CertTTL time.Duration
	// Tunnel tunes the sessions.
	Tunnel tunnel.Config
	// Relay configures the gt/bd relay (its Town and Logger are filled in).
	Relay relay.Config
	// Git configures the git service (Town, HooksDir, Upstream and Logger
	// are filled in).
	Git git.Config
	// Upstream turns on pushing landed branches to each rig's origin.
	Upstream bool
	// UpstreamConfig tunes the upstream queue.
	UpstreamConfig git.UpstreamConfig
	// Liveness are the thresholds polecats are judged by.
	Liveness heartbeat.Thresholds
	// MetricsListen, when set, is where Prometheus metrics are served.
	MetricsListen string
	// Version is reported to agents and by status.
	Version string
	// Logger receives structured logs.
	Logger *slog.Logger
}

// Server is a running hostd.
type Server struct {
	cfg     Config
	ca      *pki.CA
	log     *slog.Logger
	reg     *Registry
	certs   *serverCert
	revoked atomic.Pointer[map[string]bool]
	mux     *tunnel.ServeMux
	git     *git.Service
	queue   *git.Upstream
	judge   *heartbeat.Judge
	metrics *metrics

	saveMu        sync.Mutex
	livenessPath  string
	livenessDirty atomic.Bool
	started       time.Time
	ln            *tunnel.Listener
}

// New opens the CA and prepares a server; Run starts it.
func New(cfg Config) (*Server, error) {
	if cfg.Listen == "" {
		cfg.Listen = fmt.Sprintf(":%d", tunnel.DefaultPort)
	}
	if cfg.CertTTL <= 0 {
		cfg.CertTTL = pki.DefaultTTL
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	ca, err := pki.Open(pki.Dir(cfg.Town), cfg.TrustDomain)
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, ca: ca, log: cfg.Logger, started: time.Now()}
	s.reg = newRegistry(s.log)
	s.livenessPath = filepath.Join(control.SocketDir(cfg.Town), "liveness.json")
	restored, err := loadLiveness(s.livenessPath)
	if err != nil {
		return nil, err
	}
	s.judge = heartbeat.NewJudge(cfg.Liveness, time.Now, func(r heartbeat.Record, e heartbeat.Event) {
		s.logTransition(r, e)
		s.livenessDirty.Store(true)
	})
	s.judge.Restore(restored)
	s.metrics = newMetrics(s)
	s.certs = newServerCert(ca, cfg.ServerNames)
	if _, err := s.certs.get(nil); err != nil {
		return nil, err
	}
	if _, err := s.ReloadRevocations(); err != nil {
		return nil, err
	}
	s.mux = tunnel.NewServeMux()
	s.mux.HandleFunc(tunnel.KindCert, s.serveRenew)
	s.mux.HandleFunc(tunnel.KindPing, servePing)
	s.mux.HandleFunc(tunnel.KindHeartbeat, s.serveHeartbeat)
	cfg.Relay.Town, cfg.Relay.Logger = cfg.Town, cfg.Logger
	s.mux.Handle(tunnel.KindRelay, relay.New(cfg.Relay))
	runtime := control.SocketDir(cfg.Town)
	if cfg.Upstream {
		if s.queue, err = git.OpenUpstream(cfg.Town, filepath.Join(runtime, "upstream.json"), cfg.UpstreamConfig, cfg.Logger); err != nil {
			return nil, err
		}
	}
	gcfg := cfg.Git
	gcfg.Town, gcfg.HooksDir, gcfg.Upstream, gcfg.Logger = cfg.Town, filepath.Join(runtime, "hooks"), s.queue, cfg.Logger
	if s.git, err = git.New(gcfg); err != nil {
		return nil, err
	}
	s.mux.Handle(tunnel.KindGit, s.git.Handler())
	return s, nil
}

// Handle registers the host side of a stream kind; later issues' services
// (relay, git, heartbeat, sync) plug in here.
func (s *Server) Handle(kind string, h tunnel.Handler) { s.mux.Handle(kind, h) }

// Run listens for tunnels and on the control socket until ctx ends.
func (s *Server) Run(ctx context.Context) error {
	resetKey, err := loadResetKey(s.cfg.Town)
	if err != nil {
		return err
	}
	ln, err := tunnel.Listen(s.cfg.Listen, tunnel.ServerConfig{
		StatelessResetKey: resetKey,
		GetCertificate:    s.certs.get,
		ClientCAs:         s.ca.Pool(),
		TrustDomain:       s.ca.TrustDomain,
		Authorize:         s.authorize,
		Join:              s.serveJoin,
		ServerVersion:     s.cfg.Version,
		Config:            s.cfg.Tunnel,
		Logger:            s.log,
	})
	if err != nil {
		return err
	}
	s.ln = ln
	defer ln.Close()
	ctlLn, err := control.Listen(s.cfg.Town)
	if err != nil {
		return err
	}
	ctl := &http.Server{Handler: control.Handler(s), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = ctl.Serve(ctlLn) }()
	defer ctl.Close()
	go func() { _ = s.git.Serve(ctx) }()
	go s.tick(ctx)
	if s.cfg.MetricsListen != "" {
		go func() {
			if err := s.metrics.serve(ctx, s.cfg.MetricsListen); err != nil {
				s.log.Error("metrics endpoint failed", "addr", s.cfg.MetricsListen, "err", err)
			}
		}()
	}
	if s.queue != nil {
		go s.queue.Run(ctx)
	}
	s.log.Info("hostd listening", "addr", ln.Addr(), "transports", "quic+tcp", "control", control.SocketPath(s.cfg.Town), "ca", s.ca.Dir)

	var sessions sync.WaitGroup
	for {
		sess, err := ln.Accept(ctx)
		if err != nil {
			if ctx.Err() != nil {
				waitAtMost(&sessions, 2*time.Second) // let each session tell its agent
				s.livenessDirty.Store(true)
				s.saveLiveness() // the last known states, for the next start
				return nil
			}
			if errors.Is(err, net.ErrClosed) {
				return err
			}
			continue
		}
		sessions.Add(1)
		go func() {
			defer sessions.Done()
			s.serveSession(ctx, sess)
		}()
	}
}

// waitAtMost waits for wg, or d.
func waitAtMost(wg *sync.WaitGroup, d time.Duration) {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(d):
	}
}

// Addr is the tunnel listen address once Run has started.
func (s *Server) Addr() string {
	if s.ln == nil {
		return ""
	}
	return s.ln.Addr()
}

func (s *Server) serveSession(ctx context.Context, sess *tunnel.Session) {
	c := s.reg.add(sess)
	s.judge.Connected(c.id)
	err := sess.Serve(ctx, s.metrics.count(s.mux))
	if ctx.Err() != nil {
		// Tell the agent, so it reconnects at once instead of waiting for
		// its idle timeout.
		_ = sess.CloseWithReason("hostd shutting down")
		return // the polecat's last known state stays as it was
	}
	if s.reg.remove(c, err) {
		s.judge.Disconnected(c.id, disconnectReason(err))
	}
}

// disconnectReason is a short reason for a lost tunnel.
func disconnectReason(err error) string {
	if err == nil {
		return "closed"
	}
	msg := err.Error()
	if len(msg) > 120 {
		msg = msg[:120] + "..."
	}
	return msg
}

// authorize refuses revoked certificates during the handshake.
func (s *Server) authorize(id tunnel.Identity, leaf *x509.Certificate) error {
	if (*s.revoked.Load())[pki.SerialOf(leaf)] {
		return errors.New("certificate revoked")
	}
	return nil
}

// ReloadRevocations re-reads the revocation records and closes the live
// tunnels of revoked certificates.
func (s *Server) ReloadRevocations() (int, error) {
	set, err := s.ca.RevokedSerials()
	if err != nil {
		return 0, fmt.Errorf("loading revocations: %w", err)
	}
	s.revoked.Store(&set)
	closed := s.reg.closeSerials(set)
	for _, id := range closed {
		s.judge.Revoke(id)
	}
	return len(closed), nil
}

// Status reports the daemon's state for the control API: every polecat
// hostd knows, connected or not.
func (s *Server) Status() control.Status {
	conns := s.reg.snapshot()
	recs := s.judge.Snapshot()
	st := control.Status{Version: s.cfg.Version, Listen: s.Addr(), Started: s.started, Polecats: make([]control.Polecat, 0, len(recs))}
	for _, r := range recs {
		st.Polecats = append(st.Polecats, polecatRow(r, conns))
	}
	if s.queue != nil {
		st.Upstream = s.queue.Pending()
	}
	return st
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

// loadResetKey returns the QUIC stateless reset key kept in the runtime
// directory, making it on first use. Keeping it across restarts lets a
// restarted hostd reset its predecessor's connections the moment an agent
// sends stream data, rather than after the idle timeout.
func loadResetKey(town string) (*[32]byte, error) {
	path := filepath.Join(control.SocketDir(town), "quic-reset.key")
	var key [32]byte
	b, err := os.ReadFile(path)
	if err == nil && len(b) == len(key) {
		copy(key[:], b)
		return &key, nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("creating runtime directory: %w", err)
	}
	_, _ = rand.Read(key[:])
	if err := pki.WriteAtomic(path, key[:], 0o600); err != nil {
		return nil, fmt.Errorf("saving QUIC reset key: %w", err)
	}
	return &key, nil
}

// polecatRow joins a judged record with its tunnel, if connected.
func polecatRow(r heartbeat.Record, conns map[tunnel.Identity]connInfo) control.Polecat {
	p := control.Polecat{
		Identity: r.Identity, Rig: r.Identity.Rig, Name: r.Identity.Name,
		State: string(r.State), StateSince: r.Since, Reason: r.Reason, Restored: r.Restored,
		LastBeat: r.LastBeatAt, IdleSeconds: -1,
	}
	if c, ok := conns[r.Identity]; ok {
		p.Connected, p.Transport, p.Remote, p.Since = true, c.transport, c.remote, c.since
		p.RTTMillis, p.Streams, p.CertSerial, p.CertExpires = float64(c.rtt.Microseconds())/1000, c.streams, c.serial, c.expires
	}
	if b := r.LastBeat; b != nil {
		if p.Connected && b.Agent.RTTMillis > 0 {
			// The agent measures RTT continuously (its keepalives); hostd's
			// own estimate only moves when hostd sends, which is rarely.
			p.RTTMillis = b.Agent.RTTMillis
		}
		p.SessionState, p.Command, p.Processes = b.Session.State, b.Session.Command, b.Session.Processes
		p.CPUPercent, p.RSSBytes = b.Session.CPUPercent, b.Session.RSSBytes
		if b.Session.IdleSeconds >= 0 {
			p.IdleSeconds = b.Session.IdleSeconds + time.Since(r.LastBeatAt).Seconds()
		}
	}
	return p
}

// Polecat is one polecat's detail for the control API.
func (s *Server) Polecat(id tunnel.Identity) (control.PolecatDetail, bool) {
	r, ok := s.judge.Get(id)
	if !ok {
		return control.PolecatDetail{}, false
	}
	return control.PolecatDetail{Polecat: polecatRow(r, s.reg.snapshot()), Beat: r.LastBeat, Events: r.Events}, true
}
