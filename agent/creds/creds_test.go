package creds

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/polecat-sidecar/sidecar/tunnel/tunneltest"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

var furiosa = wire.Identity{Rig: "gastown", Name: "furiosa"}

func certPEM(c tls.Certificate) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Certificate[0]})
}

func keyPEM(t *testing.T, c tls.Certificate) []byte {
	der, err := x509.MarshalPKCS8PrivateKey(c.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
}

// write puts cert, key and CA files in a new directory.
func write(t *testing.T, cert, key, ca []byte) Paths {
	dir := t.TempDir()
	p := Paths{Cert: filepath.Join(dir, "client.crt"), Key: filepath.Join(dir, "client.key"), CA: filepath.Join(dir, "ca.crt")}
	for path, b := range map[string][]byte{p.Cert: cert, p.Key: key, p.CA: ca} {
		if b != nil {
			if err := os.WriteFile(path, b, 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	return p
}

func TestLoad(t *testing.T) {
	ca, other := tunneltest.NewCA(t), tunneltest.NewCA(t)
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Cert.Raw})
	good := ca.Client(t, furiosa)
	now := time.Now()
	expired := ca.Client(t, furiosa, tunneltest.Validity(now.Add(-2*time.Hour), now.Add(-time.Hour)))
	future := ca.Client(t, furiosa, tunneltest.Validity(now.Add(time.Hour), now.Add(2*time.Hour)))
	foreign := other.Client(t, furiosa)
	server := ca.Server(t)

	s, err := Load(write(t, certPEM(good), keyPEM(t, good), caPEM))
	if err != nil {
		t.Fatalf("good credentials: %v", err)
	}
	if got, _ := s.GetClientCertificate(nil); got.Leaf.SerialNumber.Cmp(good.Leaf.SerialNumber) != 0 {
		t.Error("GetClientCertificate returns another certificate")
	}
	if at := s.RenewAt(); !at.After(good.Leaf.NotBefore) || !at.Before(good.Leaf.NotAfter) {
		t.Errorf("RenewAt %v outside the validity period", at)
	}
	// A certificate that starts after this machine's clock is hostd's to
	// judge: this clock is behind (a laptop's Docker VM after a sleep).
	if _, err := Load(write(t, certPEM(future), keyPEM(t, future), caPEM)); err != nil {
		t.Errorf("a certificate not yet valid by this clock: %v", err)
	}

	cases := []struct {
		name          string
		cert, key, ca []byte
		want          string
	}{
		{"missing cert", nil, keyPEM(t, good), caPEM, "does not exist"},
		{"missing key", certPEM(good), nil, caPEM, "does not exist"},
		{"missing CA", certPEM(good), keyPEM(t, good), nil, "does not exist"},
		{"garbage cert", []byte("hello"), keyPEM(t, good), caPEM, "with key"},
		{"garbage CA", certPEM(good), keyPEM(t, good), []byte("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"), "CA certificate"},
		{"key of another certificate", certPEM(good), keyPEM(t, foreign), caPEM, "does not match"},
		{"expired", certPEM(expired), keyPEM(t, expired), caPEM, "expired at"},
		{"another CA", certPEM(foreign), keyPEM(t, foreign), caPEM, "not a client certificate from CA"},
		{"server certificate", certPEM(server), keyPEM(t, server), caPEM, "not a client certificate from CA"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Load(write(t, c.cert, c.key, c.ca))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want an error containing %q", err, c.want)
			}
		})
	}
	if _, err := Load(Paths{}); err == nil || !strings.Contains(err.Error(), "no ") {
		t.Errorf("empty paths: %v", err)
	}
}

// loadGood writes a valid certificate of ca, its key and ca, and loads
// them.
func loadGood(t *testing.T, ca *tunneltest.CA) (*Store, Paths, tls.Certificate) {
	t.Helper()
	good := ca.Client(t, furiosa)
	p := write(t, certPEM(good), keyPEM(t, good), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Cert.Raw}))
	s, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	return s, p, good
}

// TestInstallRefusesBadAnswers: what hostd answers to a renewal crosses a
// trust boundary too; a bad answer changes nothing on disk or in memory.
func TestInstallRefusesBadAnswers(t *testing.T) {
	ca, other := tunneltest.NewCA(t), tunneltest.NewCA(t)
	s, p, good := loadGood(t, ca)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	answers := map[string][]byte{
		"garbage":            []byte("not a certificate"),
		"empty":              nil,
		"other key":          certPEM(ca.Client(t, furiosa)),
		"other CA":           certPEM(other.Client(t, furiosa)),
		"expired":            certPEM(ca.Client(t, furiosa, tunneltest.Validity(time.Now().Add(-2*time.Hour), time.Now().Add(-time.Hour)))),
		"server certificate": certPEM(ca.Server(t)),
	}
	before, _ := os.ReadFile(p.Cert)
	for name, answer := range answers {
		if err := s.install(answer, key); err == nil {
			t.Errorf("%s: installed", name)
		}
	}
	after, _ := os.ReadFile(p.Cert)
	if string(before) != string(after) || s.Leaf().SerialNumber.Cmp(good.Leaf.SerialNumber) != 0 {
		t.Error("a refused answer changed the credentials")
	}
}

// TestInstallWithClockBehind: a renewal hostd issued by its clock is
// installed when this machine's clock is behind it by more than the
// certificate's backdating (the soak's clock-step fault: a container
// 30 minutes behind would otherwise refuse every renewal and be locked
// out when its certificate expires).
func TestInstallWithClockBehind(t *testing.T) {
	ca := tunneltest.NewCA(t)
	s, _, good := loadGood(t, ca)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	hostdNow := time.Now().Add(30 * time.Minute)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(42), URIs: good.Leaf.URIs, NotBefore: hostdNow.Add(-time.Minute), NotAfter: hostdNow.Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.Key)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.install(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), key); err != nil {
		t.Fatalf("a renewal starting 29 minutes after this clock: %v", err)
	}
	if s.Leaf().SerialNumber.Int64() != 42 {
		t.Error("the renewal is not the current certificate")
	}
}

func TestJoinRefusesMalformedToken(t *testing.T) {
	for _, tok := range []string{"", "gtj1", "not-a-token", "gtj1.a.b.c"} {
		if _, err := Join(t.Context(), "127.0.0.1:1", "localhost", Paths{}, tok, furiosa); err == nil || !strings.Contains(err.Error(), "malformed") {
			t.Errorf("token %q: %v", tok, err)
		}
	}
}

// TestJoinUnreachable: a join that finds nothing listening is an
// *UnreachableError (its token unused: the agent may try again); one that
// reaches a listener that is not hostd is not.
func TestJoinUnreachable(t *testing.T) {
	sixteen := base64.RawURLEncoding.EncodeToString(make([]byte, 16))
	tok := wire.JoinToken{ID: sixteen, Secret: sixteen, CAFingerprint: make([]byte, 32)}.String()
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	nothing := closed.Addr().String()
	closed.Close()
	hangUp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer hangUp.Close()
	go func() {
		for {
			c, err := hangUp.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	for _, tc := range []struct {
		addr        string
		unreachable bool
	}{{nothing, true}, {hangUp.Addr().String(), false}} {
		_, err := Join(t.Context(), tc.addr, "localhost", Paths{}, tok, furiosa)
		if _, ok := errors.AsType[*UnreachableError](err); err == nil || ok != tc.unreachable {
			t.Errorf("join via %s: %v; want unreachable %v", tc.addr, err, tc.unreachable)
		}
	}
}
