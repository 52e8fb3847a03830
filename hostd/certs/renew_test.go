package certs

import (
	"context"
	"crypto/x509"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/polecat-sidecar/sidecar/hostd/pki"
	"github.com/polecat-sidecar/sidecar/tunnel"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// renew asks for a certificate over csr on s and returns hostd's answer.
func renew(t *testing.T, s *tunnel.Session, csr []byte) ([]byte, error) {
	t.Helper()
	st, err := s.OpenStream(context.Background(), wire.KindCert, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Write(csr); err != nil {
		t.Fatal(err)
	}
	_ = st.CloseWrite()
	return io.ReadAll(st)
}

// TestRenew: a renewal over the tunnel issues a certificate for the
// tunnel's identity over the new key, lets the session live until it
// expires, and is refused past RenewalsPerHour.
func TestRenew(t *testing.T) {
	f := newFixture(t, Config{TTL: 2 * time.Hour, RenewalsPerHour: 2})
	s, err := f.dial(t, f.issue(t, furiosa))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		refused string
	}{
		{"first", ""},
		{"second", ""},
		{"third in the hour", "more than 2 renewals in an hour"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			key, csr := newCSR(t)
			body, err := renew(t, s, csr)
			if tc.refused != "" {
				if _, ok := errors.AsType[*wire.RemoteError](err); !ok || !strings.Contains(err.Error(), tc.refused) {
					t.Fatalf("renewal answered %q, %v; want a refusal saying %q", body, err, tc.refused)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			cert, err := pki.ParseCertPEM(body)
			if err != nil {
				t.Fatal(err)
			}
			if !key.PublicKey.Equal(cert.PublicKey) {
				t.Error("the certificate is not over the new key")
			}
			if id, err := wire.IdentityFromURIs(cert.URIs, f.ca.TrustDomain); err != nil || id != furiosa {
				t.Errorf("identity %v, %v", id, err)
			}
			c, _ := f.reg.Current(furiosa)
			if info := c.Info(); info.Serial != pki.SerialOf(cert) || !info.Expires.Equal(cert.NotAfter) {
				t.Errorf("registry holds serial %s until %v, want the renewal's %s until %v", info.Serial, info.Expires, pki.SerialOf(cert), cert.NotAfter)
			}
			if _, err := cert.Verify(x509.VerifyOptions{Roots: f.ca.Pool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
				t.Errorf("not a client certificate of the town's CA: %v", err)
			}
		})
	}
	if s.Err() != nil {
		t.Errorf("the session ended: %v", s.Err())
	}
}

// TestRenewRevoked: a renewal refused because the certificate was revoked
// on disk before this hostd reloaded the revocations closes the tunnel
// and tells Revoked, so liveness shows the polecat revoked, not merely
// disconnected (TestHostileRevocationRace saw it disconnected).
func TestRenewRevoked(t *testing.T) {
	f := newFixture(t, Config{})
	s, err := f.dial(t, f.issue(t, furiosa))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.ca.Revoke(furiosa.String()); err != nil { // as 'hostd cert revoke' does, untold
		t.Fatal(err)
	}
	_, csr := newCSR(t)
	if body, err := renew(t, s, csr); err == nil || !strings.Contains(err.Error(), "revoked") {
		t.Fatalf("renewal of a revoked certificate answered %q, %v", body, err)
	}
	if err := closed(t, s); err == nil || !strings.Contains(err.Error(), "certificate revoked") {
		t.Errorf("the tunnel ended with %v", err)
	}
	told := f.told()
	if len(told) != 1 || told[0].id != furiosa || !told[0].validFrom.IsZero() {
		t.Errorf("Revoked heard %+v, want %s revoked whatever it did", told, furiosa)
	}
}
