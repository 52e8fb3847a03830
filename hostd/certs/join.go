package certs

import (
	"crypto/tls"
	"encoding/pem"
	"time"

	"github.com/polecat-sidecar/sidecar/hostd/pki"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// ServeJoin answers one join request on an unauthenticated TLS connection
// (tunnel.ServerConfig.Join): a valid, unused token bound to the requested
// identity buys one certificate over the container's own key. Nothing
// else is served here.
func (s *Service) ServeJoin(c *tls.Conn) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(wire.JoinTimeout))
	var req wire.JoinRequest
	if err := wire.ReadJoinMessage(c, &req); err != nil {
		s.log.Warn("refused join", "remote", c.RemoteAddr(), "err", err)
		s.metrics.joins.WithLabelValues("refused").Inc()
		_ = wire.WriteJoinMessage(c, wire.JoinResponse{Error: err.Error()})
		return
	}
	resp := s.join(req)
	if resp.Error != "" {
		s.log.Warn("refused join", "polecat", req.Identity, "remote", c.RemoteAddr(), "err", resp.Error)
		s.metrics.joins.WithLabelValues("refused").Inc()
	} else {
		s.log.Info("polecat joined", "polecat", req.Identity, "remote", c.RemoteAddr())
		s.metrics.joins.WithLabelValues("issued").Inc()
	}
	if err := wire.WriteJoinMessage(c, resp); err != nil && resp.Error == "" {
		s.log.Warn("sending a joined polecat its certificate failed; its token is spent: give it a new one ('hostd token create <rig>/<name>')",
			"polecat", req.Identity, "remote", c.RemoteAddr(), "err", err)
	}
}

// join checks everything that can be checked before the token is spent,
// so a malformed request does not burn it, then issues.
func (s *Service) join(req wire.JoinRequest) wire.JoinResponse {
	csr, err := pki.ParseCSR(req.CSR)
	if err != nil {
		return wire.JoinResponse{Error: err.Error()}
	}
	id := req.Identity
	if err := id.Validate(); err != nil {
		return wire.JoinResponse{Error: "identity: " + err.Error()}
	}
	if err := s.ca.RedeemToken(req.Token, id); err != nil {
		return wire.JoinResponse{Error: err.Error()}
	}
	cert, err := s.ca.IssueClient(id, csr.PublicKey, s.cfg.TTL, pki.SourceJoin)
	if err != nil {
		return wire.JoinResponse{Error: err.Error()}
	}
	return wire.JoinResponse{Cert: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw}), CA: s.ca.CertPEM()}
}
