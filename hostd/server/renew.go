package server

import (
	"context"
	"encoding/pem"
	"io"

	"github.com/polecat-sidecar/sidecar/hostd/pki"
	"github.com/polecat-sidecar/sidecar/tunnel"
)

// maxCSR bounds a renewal request.
const maxCSR = 16 << 10

// serveRenew signs a renewal: the agent sends a PKCS#10 request (DER) over
// a key it made, and half-closes; hostd answers with the certificate (PEM)
// for the identity of the tunnel the request came on, and lets the session
// live until the new certificate's expiry.
func (s *Server) serveRenew(_ context.Context, st *tunnel.Stream) {
	sess := st.Session()
	id := sess.Peer()
	csr, err := io.ReadAll(io.LimitReader(st, maxCSR+1))
	if err != nil {
		_ = st.Reject("reading certificate request: " + err.Error())
		return
	}
	if len(csr) > maxCSR {
		_ = st.Reject("certificate request larger than 16 KiB")
		return
	}
	cert, err := s.ca.SignCSR(id, csr, s.cfg.CertTTL, pki.SourceRenew)
	if err != nil {
		s.log.Warn("refused certificate renewal", "polecat", id, "err", err)
		_ = st.Reject(err.Error())
		return
	}
	if c := s.reg.lookup(sess); c != nil {
		c.extend(pki.SerialOf(cert), cert.NotAfter)
	}
	s.log.Info("renewed certificate", "polecat", id, "serial", pki.SerialOf(cert), "not_after", cert.NotAfter)
	_, _ = st.Write(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw}))
}
