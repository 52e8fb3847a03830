// Package certs is hostd's certificate service: its own rotating server
// certificate, the revocation check every handshake goes through, the
// join exchange that buys a fresh container its first certificate, and
// renewal over the tunnel. Revoking closes live tunnels through the
// registry.
package certs

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/polecat-sidecar/sidecar/hostd/api"
	"github.com/polecat-sidecar/sidecar/hostd/limits"
	"github.com/polecat-sidecar/sidecar/hostd/pki"
	"github.com/polecat-sidecar/sidecar/hostd/registry"
	"github.com/polecat-sidecar/sidecar/internal/logging"
	"github.com/polecat-sidecar/sidecar/internal/settings"
	"github.com/polecat-sidecar/sidecar/tunnel"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// Config tunes the certificate service.
type Config struct {
	// TTL is the lifetime of certificates issued on join and renewal.
	TTL time.Duration
	// ServerNames are extra DNS names and IP addresses for hostd's server
	// certificate, beyond localhost, the host's own names and addresses,
	// and host.docker.internal.
	ServerNames []string
	// RenewalsPerHour bounds the renewals one polecat gets (a burst of
	// that many, then one every hour/RenewalsPerHour); an agent renews
	// once per two thirds of the TTL.
	RenewalsPerHour int
	// Watch is how often the revocation records are checked for changes
	// written by another process (hostd cert revoke), so a revocation
	// applies even if nobody tells the daemon.
	Watch time.Duration
	// Revoked, when set, is told of every polecat revoked by identity, with
	// the time of the revocation (its tunnels from then on stand on new
	// certificates), and of every one whose
	// live tunnel a revocation closed (zero time); liveness marks it
	// revoked.
	Revoked func(id wire.Identity, validFrom time.Time)
	// Logger receives joins, renewals and refusals.
	Logger *slog.Logger
}

// DefaultConfig issues certificates for pki.DefaultTTL (24h), at most 12
// renewals per polecat per hour, and checks for revocations every second.
func DefaultConfig() Config {
	return Config{
		TTL:             pki.DefaultTTL, // above 0
		RenewalsPerHour: 12,             // at least 1
		Watch:           time.Second,    // above 0
		Logger:          slog.Default(),
	}
}

// Validate names each field out of its range; New calls it once zero
// fields have their defaults.
func (c Config) Validate() error {
	return errors.Join(
		settings.Positive("TTL", c.TTL),
		settings.Positive("RenewalsPerHour", c.RenewalsPerHour),
		settings.Positive("Watch", c.Watch),
	)
}

// Service is safe for concurrent use.
type Service struct {
	cfg      Config
	ca       *pki.CA
	reg      *registry.Registry
	log      *slog.Logger
	server   *serverCert
	metrics  *metrics
	renewals *limits.Rate
	logLimit *logging.Limiter

	// reloadMu serialises reloads; revoked and stamp are what the last
	// one read.
	reloadMu sync.Mutex
	revoked  atomic.Pointer[pki.Revocations]
	stamp    atomic.Pointer[string]
}

// New issues hostd's server certificate and loads the revocations; zero
// Config fields take DefaultConfig's.
func New(ca *pki.CA, reg *registry.Registry, cfg Config) (*Service, error) {
	settings.FillZero(&cfg, DefaultConfig())
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("certs: %w", err)
	}
	s := &Service{cfg: cfg, ca: ca, reg: reg, log: cfg.Logger, server: newServerCert(ca, cfg.ServerNames), metrics: newMetrics(),
		renewals: limits.NewRate(cfg.RenewalsPerHour, time.Hour), logLimit: logging.NewLimiter(10, time.Minute)}
	if _, err := s.server.get(nil); err != nil {
		return nil, fmt.Errorf("issuing hostd's server certificate: %w", err)
	}
	if _, err := s.ReloadRevocations(); err != nil {
		return nil, err
	}
	return s, nil
}

// CA is the town's CA.
func (s *Service) CA() *pki.CA { return s.ca }

// Authorize refuses revoked certificates during the handshake, having
// first picked up any revocation written since the last look.
func (s *Service) Authorize(id wire.Identity, leaf *x509.Certificate) error {
	if s.ca.RevocationStamp() != *s.stamp.Load() {
		if _, err := s.ReloadRevocations(); err != nil {
			s.log.Error("reloading revocations failed; refusing the handshake", "polecat", id, "err", err)
			return fmt.Errorf("hostd cannot read its revocations: %w", err)
		}
	}
	if s.revoked.Load().Revoked(id, leaf) {
		s.metrics.handshakes.WithLabelValues("revoked").Inc()
		return pki.ErrRevoked
	}
	return nil
}

// Admitted checks a session the registry has just added against the
// revocations, and closes it if revoked. A revocation reloaded between the
// handshake's check and the registry's add is caught either here or by
// the reload closing what the registry holds.
func (s *Service) Admitted(c *registry.Conn) {
	rev := s.revoked.Load()
	if c.StandsOn(func(cert *x509.Certificate) bool { return rev.Revoked(c.Identity(), cert) }) {
		s.log.Warn("closing tunnel: certificate revoked", "polecat", c.Identity())
		s.closeRevoked(c.Session(), c.Identity())
	}
}

// closeRevoked closes a tunnel that stands on a revoked certificate and
// tells Revoked, so that liveness shows the polecat revoked rather than
// disconnected: the revocation may be on disk before this hostd reloads it
// (a renewal refused under the CA's lock finds it first), and then no
// reload closes the tunnel or tells anyone. Revoked is told first, so that
// whoever sees the tunnel end already finds the polecat revoked.
func (s *Service) closeRevoked(sess *tunnel.Session, id wire.Identity) {
	if s.cfg.Revoked != nil {
		s.cfg.Revoked(id, time.Time{})
	}
	_ = sess.CloseWithReason(wire.CloseRevoked)
}

// Watch picks up revocations written by another process (hostd cert
// revoke, a CLI killed before it told the daemon) until ctx ends.
func (s *Service) Watch(ctx context.Context) {
	t := time.NewTicker(s.cfg.Watch)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if s.ca.RevocationStamp() == *s.stamp.Load() {
			continue
		}
		if n, err := s.ReloadRevocations(); err != nil {
			s.log.Error("reloading revocations failed", "err", err)
		} else if n > 0 {
			s.log.Info("revocations changed on disk; reloaded", "tunnels_closed", n)
		}
	}
}

// ReloadRevocations re-reads the revocations, closes the live tunnels of
// revoked certificates and tells Revoked of the polecats concerned,
// returning how many tunnels it closed.
func (s *Service) ReloadRevocations() (int, error) {
	s.reloadMu.Lock()
	defer s.reloadMu.Unlock()
	stamp := s.ca.RevocationStamp()
	rev, err := s.ca.Revocations()
	if err != nil {
		return 0, fmt.Errorf("loading revocations: %w", err)
	}
	prev := s.revoked.Load()
	s.revoked.Store(&rev)
	s.stamp.Store(&stamp)
	closed := s.reg.CloseIf(rev.Revoked, wire.CloseRevoked)
	if s.cfg.Revoked != nil {
		for id, cut := range rev.Identities {
			if prev == nil || !prev.Identities[id].Equal(cut) {
				s.cfg.Revoked(id, cut)
			}
		}
		for _, id := range closed {
			s.cfg.Revoked(id, time.Time{})
		}
	}
	return len(closed), nil
}

// IssueCert issues a certificate for id with a key made here (for
// operators' scripts, through the admin API; agents join or renew with
// keys of their own), valid for ttl, or the configured TTL when ttl is 0.
func (s *Service) IssueCert(id wire.Identity, ttl time.Duration) (api.IssuedCert, error) {
	if ttl <= 0 {
		ttl = s.cfg.TTL
	}
	certPEM, keyPEM, err := s.ca.NewClientKeyPair(id, ttl)
	if err != nil {
		return api.IssuedCert{}, err
	}
	cert, err := pki.ParseCertPEM(certPEM)
	if err != nil {
		return api.IssuedCert{}, err
	}
	s.log.Info("issued certificate", "polecat", id, "serial", pki.SerialOf(cert), "not_after", cert.NotAfter, "via", "admin API")
	return api.IssuedCert{CN: id.CommonName(), Cert: string(certPEM), Key: string(keyPEM), CA: string(s.ca.CertPEM()),
		Serial: pki.SerialOf(cert), ExpiresAt: cert.NotAfter}, nil
}

// Expected says whether the CA issued id a certificate or holds a live
// join token for it (pki.CA.Expected).
func (s *Service) Expected(id wire.Identity) (bool, error) { return s.ca.Expected(id) }

// Revoke revokes by serial or <rig>/<name>, persistently, and closes the
// live tunnels of what it revoked; it returns how many certificates.
func (s *Service) Revoke(target string) (int, error) {
	recs, err := s.ca.Revoke(target)
	if err != nil {
		return 0, err
	}
	for _, r := range recs {
		s.log.Warn("revoked certificate", "polecat", r.Identity, "serial", r.Serial)
	}
	_, err = s.ReloadRevocations()
	return len(recs), err
}
