package creds

import (
	"context"
	"fmt"
	"io"

	"github.com/polecat-sidecar/sidecar/tunnel"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// Renew asks hostd, over sess, for a new certificate for a key made here,
// then saves and uses it. The session itself is untouched: hostd extends it
// to the new certificate's lifetime, so no stream is dropped.
func (s *Store) Renew(ctx context.Context, sess *tunnel.Session) error {
	key, csr, err := newKeyAndCSR()
	if err != nil {
		return err
	}
	st, err := sess.OpenStream(ctx, wire.KindCert, nil)
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
	certPEM, err := io.ReadAll(io.LimitReader(st, wire.MaxCertPEM))
	if err != nil {
		return fmt.Errorf("renewing certificate: %w", err)
	}
	if err := s.install(certPEM, key); err != nil {
		return fmt.Errorf("renewing certificate: %w", err)
	}
	return nil
}
