package creds

import (
	"context"
	"crypto/x509"
	"fmt"
	"io"
	"os"

	"github.com/polecat-sidecar/sidecar/tunnel"
)

// maxCertPEM bounds hostd's answer to a renewal or join.
const maxCertPEM = 64 << 10

// Renew asks hostd, over sess, for a new certificate for a key made here,
// then saves and uses it. The session itself is untouched: hostd extends it
// to the new certificate's lifetime, so no stream is dropped.
func (s *Store) Renew(ctx context.Context, sess *tunnel.Session) error {
	key, csr, err := newKeyAndCSR()
	if err != nil {
		return err
	}
	st, err := sess.OpenStream(ctx, tunnel.KindCert, nil)
	if err != nil {
		return fmt.Errorf("renewing certificate: %w", err)
	}
	defer st.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = st.SetDeadline(dl)
	}
	if _, err := st.Write(csr); err != nil {
		return fmt.Errorf("renewing certificate: sending request: %w", err)
	}
	if err := st.CloseWrite(); err != nil {
		return fmt.Errorf("renewing certificate: %w", err)
	}
	certPEM, err := io.ReadAll(io.LimitReader(st, maxCertPEM))
	if err != nil {
		return fmt.Errorf("renewing certificate: %w", err)
	}
	if err := s.install(certPEM, key); err != nil {
		return fmt.Errorf("renewing certificate: %w", err)
	}
	return nil
}

// Join redeems a join token at hostd's TCP address for a first
// certificate over a key made here, and writes the key, certificate and
// CA to p. The token's CA fingerprint authenticates hostd.
func Join(ctx context.Context, addr, serverName string, p Paths, token string, id tunnel.Identity) (*Store, error) {
	jt, err := tunnel.ParseJoinToken(token)
	if err != nil {
		return nil, err
	}
	key, csr, err := newKeyAndCSR()
	if err != nil {
		return nil, err
	}
	resp, err := tunnel.Join(ctx, addr, serverName, jt.CAFingerprint, tunnel.JoinRequest{Token: token, Identity: id, CSR: csr})
	if err != nil {
		return nil, err
	}
	if len(resp.Cert) > maxCertPEM || len(resp.CA) > maxCertPEM {
		return nil, fmt.Errorf("join answer too large")
	}
	ca, err := parseCert(resp.CA)
	if err != nil {
		return nil, fmt.Errorf("join answer's CA: %w", err)
	}
	if !tunnel.FingerprintMatches(ca.Raw, jt.CAFingerprint) {
		return nil, fmt.Errorf("join answer's CA does not match the token")
	}
	if err := writeAtomic(p.CA, resp.CA, 0o644); err != nil {
		return nil, fmt.Errorf("saving CA certificate: %w", err)
	}
	s := &Store{paths: p, pool: x509.NewCertPool()}
	s.pool.AddCert(ca)
	if err := s.install(resp.Cert, key); err != nil {
		_ = os.Remove(p.CA)
		return nil, err
	}
	return s, nil
}
