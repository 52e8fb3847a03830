// Package certs is hostd's certificate service: its own rotating server
// certificate, the revocation check every handshake goes through, the
// join exchange that buys a fresh container its first certificate, and
// renewal over the tunnel. Revoking closes live tunnels through the
// registry.
package certs

import (
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/polecat-sidecar/sidecar/hostd/pki"
	"github.com/polecat-sidecar/sidecar/hostd/registry"
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
	// Revoked, when set, is told of every polecat whose live tunnel a
	// revocation closed (liveness marks it revoked).
	Revoked func(wire.Identity)
	// Logger receives joins, renewals and refusals.
	Logger *slog.Logger
}

// DefaultConfig issues certificates for pki.DefaultTTL (24h).
func DefaultConfig() Config {
	return Config{TTL: pki.DefaultTTL, Logger: slog.Default()}
}

// Service is safe for concurrent use.
type Service struct {
	cfg     Config
	ca      *pki.CA
	reg     *registry.Registry
	log     *slog.Logger
	server  *serverCert
	revoked atomic.Pointer[map[string]bool]
	metrics *metrics
}

// New issues hostd's server certificate and loads the revocations; zero
// Config fields take DefaultConfig's.
func New(ca *pki.CA, reg *registry.Registry, cfg Config) (*Service, error) {
	d := DefaultConfig()
	if cfg.TTL <= 0 {
		cfg.TTL = d.TTL
	}
	if cfg.Logger == nil {
		cfg.Logger = d.Logger
	}
	s := &Service{cfg: cfg, ca: ca, reg: reg, log: cfg.Logger, server: newServerCert(ca, cfg.ServerNames), metrics: newMetrics()}
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

// Authorize refuses revoked certificates during the handshake.
func (s *Service) Authorize(_ wire.Identity, leaf *x509.Certificate) error {
	if (*s.revoked.Load())[pki.SerialOf(leaf)] {
		s.metrics.handshakes.WithLabelValues("revoked").Inc()
		return errors.New("certificate revoked")
	}
	return nil
}

// ReloadRevocations re-reads the revocation records and closes the live
// tunnels of revoked certificates, returning how many it closed.
func (s *Service) ReloadRevocations() (int, error) {
	set, err := s.ca.RevokedSerials()
	if err != nil {
		return 0, fmt.Errorf("loading revocations: %w", err)
	}
	s.revoked.Store(&set)
	closed := s.reg.CloseSerials(set, "certificate revoked")
	if s.cfg.Revoked != nil {
		for _, id := range closed {
			s.cfg.Revoked(id)
		}
	}
	return len(closed), nil
}

// IssueKeyPair issues a certificate for id with a key made here (for
// operators' scripts; agents join or renew with keys of their own), valid
// for ttl, or the configured TTL when ttl is 0.
func (s *Service) IssueKeyPair(id wire.Identity, ttl time.Duration) (certPEM, keyPEM []byte, cert *x509.Certificate, err error) {
	if ttl <= 0 {
		ttl = s.cfg.TTL
	}
	certPEM, keyPEM, err = s.ca.NewClientKeyPair(id, ttl)
	if err != nil {
		return nil, nil, nil, err
	}
	cert, err = pki.ParseCertPEM(certPEM)
	if err != nil {
		return nil, nil, nil, err
	}
	s.log.Info("issued certificate", "polecat", id, "serial", pki.SerialOf(cert), "not_after", cert.NotAfter, "via", "admin API")
	return certPEM, keyPEM, cert, nil
}

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
