package certs

import (
	"context"
	"encoding/pem"
	"io"

	"github.com/polecat-sidecar/sidecar/hostd/pki"
	"github.com/polecat-sidecar/sidecar/tunnel"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// ServeStream signs a renewal (stream kind wire.KindCert): the agent sends
// a PKCS#10 request (DER) over a key it made, and half-closes; hostd
// answers with the certificate (PEM) for the identity of the tunnel the
// request came on, and lets the session live until the new certificate's
// expiry.
func (s *Service) ServeStream(_ context.Context, st *tunnel.Stream) {
	sess := st.Session()
	id := sess.Peer()
	csr, err := io.ReadAll(io.LimitReader(st, wire.MaxCSR+1))
	if err != nil {
		s.refuseRenewal(st, "reading certificate request: "+err.Error())
		return
	}
	if len(csr) > wire.MaxCSR {
		s.refuseRenewal(st, "certificate request larger than 16 KiB")
		return
	}
	cert, err := s.ca.SignCSR(id, csr, s.cfg.TTL, pki.SourceRenew)
	if err != nil {
		s.log.Warn("refused certificate renewal", "polecat", id, "err", err)
		s.refuseRenewal(st, err.Error())
		return
	}
	if c := s.reg.Lookup(sess); c != nil {
		c.Extend(pki.SerialOf(cert), cert.NotAfter)
	}
	s.metrics.renewals.WithLabelValues("issued").Inc()
	s.log.Info("renewed certificate", "polecat", id, "serial", pki.SerialOf(cert), "not_after", cert.NotAfter)
	_, _ = st.Write(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw}))
}

func (s *Service) refuseRenewal(st *tunnel.Stream, reason string) {
	s.metrics.renewals.WithLabelValues("refused").Inc()
	_ = st.Reject(reason)
}
