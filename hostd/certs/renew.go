package certs

import (
	"context"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/polecat-sidecar/sidecar/hostd/limits"
	"github.com/polecat-sidecar/sidecar/hostd/pki"
	"github.com/polecat-sidecar/sidecar/tunnel"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// ServeStream signs a renewal (stream kind wire.KindCert): the agent sends
// a PKCS#10 request (DER) over a key it made, and half-closes; hostd
// answers with the certificate (PEM) for the identity of the tunnel the
// request came on, and lets the session live until the new certificate's
// expiry. A polecat whose certificate is revoked gets nothing (decided
// under the lock revocation takes), and each gets at most
// RenewalsPerHour.
func (s *Service) ServeStream(_ context.Context, st *tunnel.Stream) {
	sess := st.Session()
	id := sess.Peer()
	if ok, wait := s.renewals.Take(id); !ok {
		limits.Hit(limits.Renewals)
		s.refuseRenewal(st, id, fmt.Sprintf("more than %d renewals in an hour (renewals_per_hour); try again in %v",
			s.cfg.RenewalsPerHour, wait.Round(time.Second)))
		return
	}
	csr, err := io.ReadAll(io.LimitReader(st, wire.MaxCSR+1))
	if err != nil {
		s.refuseRenewal(st, id, "reading certificate request: "+err.Error())
		return
	}
	if len(csr) > wire.MaxCSR {
		s.refuseRenewal(st, id, "certificate request larger than 16 KiB")
		return
	}
	cert, err := s.ca.Renew(id, sess.PeerCertificate(), csr, s.cfg.TTL)
	if err != nil {
		s.refuseRenewal(st, id, err.Error())
		if errors.Is(err, pki.ErrRevoked) {
			s.closeRevoked(sess, id)
		}
		return
	}
	if c := s.reg.Lookup(sess); c != nil {
		c.Extend(cert)
	}
	s.metrics.renewals.WithLabelValues("issued").Inc()
	s.log.Info("renewed certificate", "polecat", id, "serial", pki.SerialOf(cert), "not_after", cert.NotAfter)
	if _, err := st.Write(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw})); err != nil {
		s.log.Warn("sending a renewed certificate failed; the agent renews again", "polecat", id, "serial", pki.SerialOf(cert), "err", err)
	}
}

// refuseRenewal tells the agent why, and logs it (at most so often per
// polecat).
func (s *Service) refuseRenewal(st *tunnel.Stream, id wire.Identity, reason string) {
	s.metrics.renewals.WithLabelValues("refused").Inc()
	if ok, held := s.logLimit.Allow(id.String()); ok {
		s.log.Warn("refused certificate renewal", "polecat", id, "reason", reason, "lines_not_logged", held)
	}
	_ = st.Reject(reason)
}
