package server

import (
	"crypto/tls"
	"encoding/pem"
	"time"

	"github.com/polecat-sidecar/sidecar/hostd/pki"
	"github.com/polecat-sidecar/sidecar/tunnel"
)

// serveJoin answers one join request on an unauthenticated TLS connection:
// a valid, unused token bound to the requested identity buys one
// certificate over the container's own key. Nothing else is served here.
func (s *Server) serveJoin(c *tls.Conn) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	var req tunnel.JoinRequest
	if err := tunnel.ReadJoinMessage(c, &req); err != nil {
		s.log.Warn("refused join", "remote", c.RemoteAddr(), "err", err)
		_ = tunnel.WriteJoinMessage(c, tunnel.JoinResponse{Error: err.Error()})
		return
	}
	// Everything that can be checked is checked before the token is
	// spent, so a malformed request does not burn it.
	resp := tunnel.JoinResponse{}
	csr, err := pki.ParseCSR(req.CSR)
	if err != nil {
		resp.Error = err.Error()
	} else if err := req.Identity.Validate(); err != nil {
		resp.Error = "identity: " + err.Error()
	} else if err := s.ca.RedeemToken(req.Token, req.Identity); err != nil {
		resp.Error = err.Error()
	} else if cert, err := s.ca.IssueClient(req.Identity, csr.PublicKey, s.cfg.CertTTL, pki.SourceJoin); err != nil {
		resp.Error = err.Error()
	} else {
		resp.Cert = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw})
		resp.CA = s.ca.CertPEM()
		s.log.Info("polecat joined", "polecat", req.Identity, "remote", c.RemoteAddr(), "serial", pki.SerialOf(cert))
	}
	if resp.Error != "" {
		s.log.Warn("refused join", "polecat", req.Identity, "remote", c.RemoteAddr(), "err", resp.Error)
	}
	_ = tunnel.WriteJoinMessage(c, resp)
}
