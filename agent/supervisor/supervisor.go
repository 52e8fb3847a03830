// Package supervisor owns gt-agent's tunnel: it connects, reconnects with
// exponential backoff and jitter when the tunnel is lost, returns from the
// TCP fallback to QUIC when UDP works again, and renews the certificate
// before it expires. Services ask it for the current session.
package supervisor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/polecat-sidecar/sidecar/agent/creds"
	"github.com/polecat-sidecar/sidecar/internal/settings"
	"github.com/polecat-sidecar/sidecar/tunnel"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// Config configures a Supervisor.
type Config struct {
	// Addr is hostd's host:port.
	Addr string
	// ServerName is the name hostd's certificate must carry.
	ServerName string
	// Creds are the agent's certificate, key and CA.
	Creds *creds.Store
	// Transport is tunnel.TransportAuto (default), TransportQUIC or
	// TransportTCP.
	Transport string
	// Tunnel tunes the session.
	Tunnel tunnel.Config
	// MinBackoff and MaxBackoff bound the wait between reconnection
	// attempts; each wait is jittered.
	MinBackoff, MaxBackoff time.Duration
	// ConnectTimeout bounds the first connection: if hostd cannot be
	// reached for this long at start, Run fails. Once connected, the agent
	// retries for ever.
	ConnectTimeout time.Duration
	// ProbeInterval is how often, while on TCP in auto mode, QUIC is tried
	// again.
	ProbeInterval time.Duration
	// Handler serves streams hostd opens (nudges, sync); nil refuses them.
	Handler tunnel.Handler
	// Logger receives state changes.
	Logger *slog.Logger
}

// DefaultConfig tries QUIC first (TCP after 2 s), retries a lost tunnel
// after 100 ms doubling to 10 s, gives up if hostd is unreachable for 30 s
// at start, probes QUIC every 30 s while on TCP, and refuses streams hostd
// opens. Addr, ServerName and Creds have no default.
func DefaultConfig() Config {
	return Config{
		Transport:      tunnel.TransportAuto,   // auto, quic or tcp
		Tunnel:         tunnel.DefaultConfig(), // zero fields take its defaults
		MinBackoff:     100 * time.Millisecond, // above 0
		MaxBackoff:     10 * time.Second,       // at least MinBackoff
		ConnectTimeout: 30 * time.Second,       // above 0
		ProbeInterval:  30 * time.Second,       // above 0
		Handler:        tunnel.NewServeMux(),   // an empty mux refuses every stream
		Logger:         slog.Default(),
	}
}

// Validate names each field out of its range; New calls it once zero
// fields (the Tunnel's too) have their defaults.
func (c Config) Validate() error {
	var creds, transport error
	if c.Creds == nil {
		creds = &settings.FieldError{Field: "Creds", Rule: "is required"}
	}
	switch c.Transport {
	case tunnel.TransportAuto, tunnel.TransportQUIC, tunnel.TransportTCP:
	default:
		transport = &settings.FieldError{Field: "Transport", Value: c.Transport,
			Rule: fmt.Sprintf("it must be %s, %s or %s", tunnel.TransportAuto, tunnel.TransportQUIC, tunnel.TransportTCP)}
	}
	return errors.Join(
		settings.Required("Addr", c.Addr),
		settings.Required("ServerName", c.ServerName),
		creds, transport, settings.Under("Tunnel", c.Tunnel.Validate()),
		settings.Positive("MinBackoff", c.MinBackoff),
		settings.AtLeast("MaxBackoff", c.MaxBackoff, c.MinBackoff),
		settings.Positive("ConnectTimeout", c.ConnectTimeout),
		settings.Positive("ProbeInterval", c.ProbeInterval),
	)
}

// Supervisor keeps one tunnel up.
type Supervisor struct {
	cfg Config
	log *slog.Logger

	mu      sync.Mutex
	current *tunnel.Session
	changed chan struct{} // closed and replaced whenever current changes

	serving  sync.WaitGroup    // each session's Serve, which Run waits for
	draining []*tunnel.Session // replaced by a QUIC session, closed when Run returns
}

// New returns a Supervisor, Run starts it; zero Config fields (and zero
// Tunnel fields) take DefaultConfig's.
func New(cfg Config) (*Supervisor, error) {
	d := DefaultConfig()
	settings.FillZero(&cfg, d)
	settings.FillZero(&cfg.Tunnel, d.Tunnel)
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("supervisor: %w", err)
	}
	return &Supervisor{cfg: cfg, log: cfg.Logger, changed: make(chan struct{})}, nil
}

// Session returns the current session, waiting for one until ctx ends.
func (s *Supervisor) Session(ctx context.Context) (*tunnel.Session, error) {
	for {
		s.mu.Lock()
		cur, ch := s.current, s.changed
		s.mu.Unlock()
		if cur != nil && cur.Err() == nil {
			return cur, nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, fmt.Errorf("no tunnel to hostd at %s: %w", s.cfg.Addr, ctx.Err())
		}
	}
}

func (s *Supervisor) setCurrent(sess *tunnel.Session) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.current = sess
	close(s.changed)
	s.changed = make(chan struct{})
}

// FatalError is a failure retrying cannot fix: hostd refused the
// certificate, or never answered within ConnectTimeout.
type FatalError struct {
	Err error
	// Refused is set when hostd refused the agent for good (its
	// certificate revoked, expired or from another CA), unlike a hostd
	// not reached at start, which a restarted agent may reach.
	Refused bool
}

func (e *FatalError) Error() string { return e.Err.Error() }
func (e *FatalError) Unwrap() error { return e.Err }

// Run keeps the tunnel up until ctx ends (returning nil) or a *FatalError;
// it returns once it has closed every session it opened and their streams
// have been served.
func (s *Supervisor) Run(ctx context.Context) error {
	defer s.serving.Wait()
	defer s.closeDraining()
	start := time.Now()
	connectedOnce := false
	closedFor := "" // the reason hostd gave when it last closed the tunnel
	backoff := s.cfg.MinBackoff
	for {
		sess, err := s.dial(ctx, s.cfg.Transport)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			if reason, ok := tunnel.PeerReason(err); ok { // closed before its welcome was read
				closedFor = reason
			}
			if tunnel.IsAuthError(err) {
				return &FatalError{Err: s.refusal(err, closedFor), Refused: true}
			}
			if !connectedOnce && time.Since(start) > s.cfg.ConnectTimeout {
				return &FatalError{Err: fmt.Errorf("cannot reach hostd at %s after %v (is 'hostd serve' running and reachable?): %w", s.cfg.Addr, s.cfg.ConnectTimeout.Round(time.Second), err)}
			}
			wait := jitter(backoff)
			s.log.Warn("tunnel connect failed; retrying", "addr", s.cfg.Addr, "in", wait.Round(time.Millisecond), "err", err)
			if !sleep(ctx, wait) {
				return nil
			}
			backoff = min(backoff*2, s.cfg.MaxBackoff)
			continue
		}
		connectedOnce = true
		backoff = s.cfg.MinBackoff
		if closedFor, err = s.hold(ctx, sess); err != nil {
			return err
		}
		if ctx.Err() != nil {
			return nil
		}
		// Lost: the first retry comes at once, with jitter only.
		if !sleep(ctx, jitter(s.cfg.MinBackoff)) {
			return nil
		}
	}
}

func (s *Supervisor) dial(ctx context.Context, transport string) (*tunnel.Session, error) {
	return tunnel.Dial(ctx, s.cfg.Addr, tunnel.ClientConfig{
		GetClientCertificate: s.cfg.Creds.GetClientCertificate,
		RootCAs:              s.cfg.Creds.RootCAs(),
		ServerName:           s.cfg.ServerName,
		Transport:            transport,
		Config:               s.cfg.Tunnel,
	})
}

// refusal says why hostd refused the handshake that failed with err, as
// far as the TLS alert it sent and closedFor, the reason it gave when it
// last closed the tunnel, tell, and what to do.
func (s *Supervisor) refusal(err error, closedFor string) error {
	leaf := s.cfg.Creds.Leaf()
	cert := fmt.Sprintf("certificate (serial %s, valid until %s)", leaf.SerialNumber.Text(16), leaf.NotAfter.UTC().Format(time.RFC3339))
	rejoin := "a new join token ('hostd token create <rig>/<name>' on the host)"
	if len(leaf.URIs) == 1 { // the identity, in whatever trust domain hostd's CA put it
		if id, err := wire.IdentityFromURIs(leaf.URIs, leaf.URIs[0].Host); err == nil {
			rejoin = fmt.Sprintf("a new join token ('hostd token create %s' on the host)", id)
		}
	}
	alert, remote := tunnel.PeerAlert(err)
	switch {
	case closedFor == wire.CloseRevoked:
		return fmt.Errorf("hostd at %s revoked this polecat's %s: it closed the tunnel saying %q and refuses the certificate since; "+
			"retrying cannot help: start the agent again with %s and no certificate (a new container, or --state-dir emptied): %w",
			s.cfg.Addr, cert, closedFor, rejoin, err)
	case remote && alert == tunnel.AlertBadCertificate:
		// hostd's only refusal of a certificate its CA signed and whose
		// validity it accepts is Authorize's: revocation (or revocations
		// it cannot read, which its log says).
		return fmt.Errorf("hostd at %s refused this polecat's %s, which is from hostd's CA and unexpired: it has been revoked ('hostd cert list' on the host shows it); "+
			"retrying cannot help: start the agent again with %s and no certificate (a new container, or --state-dir emptied): %w",
			s.cfg.Addr, cert, rejoin, err)
	case remote && alert == tunnel.AlertCertificateExpired:
		return fmt.Errorf("hostd at %s says this polecat's %s has expired (is either clock wrong?): start the agent again with %s: %w", s.cfg.Addr, cert, rejoin, err)
	case remote && alert == tunnel.AlertUnknownCA:
		return fmt.Errorf("hostd at %s does not know the CA of this polecat's %s (hostd's CA was replaced, or the certificate is another town's): start the agent again with %s: %w", s.cfg.Addr, cert, rejoin, err)
	case remote:
		return fmt.Errorf("hostd at %s refused the tunnel handshake (TLS alert %d): %w", s.cfg.Addr, alert, err)
	}
	return fmt.Errorf("hostd at %s is not the hostd this agent's CA (GT_PROXY_CA) vouches for: its certificate does not verify (another town's hostd, or its CA was replaced): %w", s.cfg.Addr, err)
}

// hold serves a session until it ends, moving to QUIC when a probe
// succeeds and renewing the certificate on schedule. It returns the
// reason hostd gave if it closed the tunnel, and a *FatalError only when
// the certificate can no longer be used.
func (s *Supervisor) hold(ctx context.Context, sess *tunnel.Session) (closedFor string, err error) {
	s.connected(ctx, sess, "connected")
	renew := time.NewTimer(untilByHostd(sess, s.cfg.Creds.RenewAt()))
	defer renew.Stop()
	probe := time.NewTicker(s.cfg.ProbeInterval)
	defer probe.Stop()
	for {
		select {
		case <-ctx.Done():
			_ = sess.CloseWithReason("agent shutting down")
			s.setCurrent(nil)
			return "", nil
		case <-sess.Done():
			s.setCurrent(nil)
			s.log.Warn("tunnel lost; reconnecting", "transport", sess.Transport(), "up_for", time.Since(sess.Since()).Round(time.Millisecond), "err", sess.Err())
			reason, _ := tunnel.PeerReason(sess.Err())
			return reason, nil
		case <-renew.C:
			next, err := s.renew(ctx, sess)
			if err != nil {
				_ = sess.CloseWithReason("agent stopping: its certificate expired")
				s.setCurrent(nil)
				return "", err
			}
			renew.Reset(next)
		case <-probe.C:
			if s.cfg.Transport != tunnel.TransportAuto || sess.Transport() != tunnel.TransportTCP {
				continue
			}
			q, err := s.dial(ctx, tunnel.TransportQUIC)
			if err != nil {
				s.log.Debug("QUIC still unavailable; staying on TCP", "err", err)
				continue
			}
			old := sess
			sess = q
			s.connected(ctx, sess, "moved back to QUIC")
			old.CloseWhenIdle(drainLimit, "replaced by a QUIC session")
			s.draining = append(slices.DeleteFunc(s.draining, func(d *tunnel.Session) bool { return d.Err() != nil }), old)
		}
	}
}

// connected publishes sess and starts serving the streams hostd opens.
func (s *Supervisor) connected(ctx context.Context, sess *tunnel.Session, what string) {
	s.setCurrent(sess)
	w := sess.Welcome()
	s.log.Info("tunnel "+what, "transport", sess.Transport(), "remote", sess.RemoteAddr(), "identity", w.Identity, "hostd", w.ServerVersion, "rtt", sess.RTT())
	if hostdNow := sess.PeerNow(); !hostdNow.IsZero() {
		if off := time.Until(hostdNow); off > clockWarn || off < -clockWarn {
			s.log.Warn("this machine's clock is off hostd's; nudge deadlines and renewals go by hostd's clock, but fix this one (NTP)",
				"hostd_minus_this", off.Round(time.Second))
		}
	}
	s.serving.Go(func() {
		err := sess.Serve(ctx, s.cfg.Handler)
		s.log.Debug("stopped serving the streams hostd opens", "transport", sess.Transport(), "err", err)
	})
}

// closeDraining closes the sessions still draining (their streams had
// until drainLimit), as Run returns.
func (s *Supervisor) closeDraining() {
	for _, old := range s.draining {
		_ = old.CloseWithReason("agent shutting down")
	}
	s.draining = nil
}

// renew renews the certificate over sess and says when to renew next;
// failures are retried until the certificate expires.
func (s *Supervisor) renew(ctx context.Context, sess *tunnel.Session) (time.Duration, error) {
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := s.cfg.Creds.Renew(rctx, sess); err != nil {
		left := untilByHostd(sess, s.cfg.Creds.Leaf().NotAfter)
		if left <= 0 {
			return 0, &FatalError{Err: fmt.Errorf("certificate expired without renewal: %w", err), Refused: true}
		}
		retry := min(max(left/10, time.Second), 5*time.Minute)
		s.log.Warn("certificate renewal failed; retrying", "in", retry, "expires_in", left.Round(time.Second), "err", err)
		return retry, nil
	}
	leaf := s.cfg.Creds.Leaf()
	s.log.Info("certificate renewed", "serial", leaf.SerialNumber.Text(16), "not_after", leaf.NotAfter)
	return max(untilByHostd(sess, s.cfg.Creds.RenewAt()), time.Second), nil
}

// clockWarn is how far this machine's clock may be off hostd's before
// the agent says so.
const clockWarn = time.Minute

// untilByHostd is how long until t, a time by hostd's clock (a
// certificate's), reckoned from hostd's time as sess's welcome gave it:
// this machine's clock may be hours off (renewing that much late, or
// giving up on a certificate hostd still accepts). By this machine's
// clock when hostd sent no time.
func untilByHostd(sess *tunnel.Session, t time.Time) time.Duration {
	if now := sess.PeerNow(); !now.IsZero() {
		return t.Sub(now)
	}
	return time.Until(t)
}

// drainLimit bounds how long a replaced session is kept for its streams.
const drainLimit = 5 * time.Minute

// jitter returns a wait in [d/2, d).
func jitter(d time.Duration) time.Duration {
	return d/2 + rand.N(d/2+1)
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
