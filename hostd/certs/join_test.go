package certs

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"strings"
	"testing"
	"time"

	"github.com/polecat-sidecar/sidecar/hostd/pki"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// join sends one join message (a wire.JoinRequest, or raw bytes) on a
// join connection to f and returns hostd's answer.
func (f *fixture) join(t *testing.T, msg any) wire.JoinResponse {
	t.Helper()
	c, err := tls.Dial("tcp", f.addr, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{wire.JoinALPN}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if raw, ok := msg.([]byte); ok {
		_, err = c.Write(raw)
	} else {
		err = wire.WriteJoinMessage(c, msg)
	}
	if err != nil {
		t.Fatal(err)
	}
	var resp wire.JoinResponse
	if err := wire.ReadJoinMessage(c, &resp); err != nil {
		t.Fatalf("reading the join answer: %v", err)
	}
	return resp
}

func newCSR(t *testing.T) (*ecdsa.PrivateKey, []byte) {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	csr, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{}, key)
	if err != nil {
		t.Fatal(err)
	}
	return key, csr
}

// TestServeJoin: a token bound to the identity buys one certificate over
// the container's key; a malformed request is refused without spending
// the token, a request for another identity spends it.
func TestServeJoin(t *testing.T) {
	f := newFixture(t, Config{TTL: 3 * time.Hour})
	_, csr := newCSR(t)
	tests := []struct {
		name    string
		first   any    // sent with a fresh token for furiosa (nil: none)
		refused string // in the first answer's error
		spent   bool   // a good request with the same token is refused after
	}{
		{"garbage line", []byte("hello\n"), "", false},
		{"bad CSR", wire.JoinRequest{Identity: furiosa, CSR: []byte("not a CSR")}, "", false},
		{"bad identity", wire.JoinRequest{Identity: wire.Identity{Rig: "gastown"}, CSR: csr}, "polecat name is empty", false},
		{"another identity", wire.JoinRequest{Identity: nux, CSR: csr}, "", true},
		{"none", nil, "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			token, err := f.ca.CreateToken(furiosa, time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			if tc.first != nil {
				if r, ok := tc.first.(wire.JoinRequest); ok {
					r.Token = token
					tc.first = r
				}
				resp := f.join(t, tc.first)
				if resp.Error == "" || resp.Cert != nil || !strings.Contains(resp.Error, tc.refused) {
					t.Fatalf("first request answered %+v, want a refusal saying %q", resp, tc.refused)
				}
			}
			key, csr := newCSR(t)
			resp := f.join(t, wire.JoinRequest{Token: token, Identity: furiosa, CSR: csr})
			if tc.spent {
				if resp.Error == "" {
					t.Fatal("a token presented for another identity was still good")
				}
				return
			}
			if resp.Error != "" {
				t.Fatalf("good request refused: %s", resp.Error)
			}
			cert, err := pki.ParseCertPEM(resp.Cert)
			if err != nil {
				t.Fatal(err)
			}
			if !key.PublicKey.Equal(cert.PublicKey) || string(resp.CA) != string(f.ca.CertPEM()) {
				t.Error("the certificate is not over the container's key, or the CA is not the town's")
			}
			if id, err := wire.IdentityFromURIs(cert.URIs, f.ca.TrustDomain); err != nil || id != furiosa {
				t.Errorf("identity %v, %v", id, err)
			}
			if life := time.Until(cert.NotAfter); life > 3*time.Hour || life < 3*time.Hour-time.Minute {
				t.Errorf("valid for %v more, want the configured 3h", life)
			}
			if again := f.join(t, wire.JoinRequest{Token: token, Identity: furiosa, CSR: csr}); again.Error == "" {
				t.Error("a token bought two certificates")
			}
		})
	}
}
