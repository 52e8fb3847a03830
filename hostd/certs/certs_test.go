package certs

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/polecat-sidecar/sidecar/hostd/registry/registrytest"

	"github.com/polecat-sidecar/sidecar/hostd/pki"
	"github.com/polecat-sidecar/sidecar/hostd/registry"
	"github.com/polecat-sidecar/sidecar/tunnel"
	"github.com/polecat-sidecar/sidecar/tunnel/tunneltest"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"

	"github.com/polecat-sidecar/sidecar/internal/settings/settingstest"
)

var (
	furiosa = wire.Identity{Rig: "gastown", Name: "furiosa"}
	nux     = wire.Identity{Rig: "gastown", Name: "nux"}
)

func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

// revocation is one call of Config.Revoked.
type revocation struct {
	id        wire.Identity
	validFrom time.Time
}

// fixture is the certificate service of a fresh town, behind a real
// tunnel listener on loopback wired as hostd wires it.
type fixture struct {
	ca   *pki.CA
	reg  *registry.Registry
	s    *Service
	addr string

	mu      sync.Mutex
	revoked []revocation
}

func newFixture(t *testing.T, cfg Config) *fixture {
	t.Helper()
	ca, _, err := pki.Init(pki.Dir(t.TempDir()), "")
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{ca: ca, reg: registrytest.New(t)}
	cfg.Logger = quiet()
	cfg.Revoked = func(id wire.Identity, validFrom time.Time) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.revoked = append(f.revoked, revocation{id, validFrom})
	}
	if f.s, err = New(ca, f.reg, cfg); err != nil {
		t.Fatal(err)
	}
	ln, err := tunnel.Listen("127.0.0.1:0", tunnel.ServerConfig{
		GetCertificate: f.s.GetCertificate, ClientCAs: ca.Pool(), TrustDomain: ca.TrustDomain,
		Authorize: f.s.Authorize, Join: f.s.ServeJoin, Logger: quiet(),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); ln.Close() })
	f.addr = ln.Addr()
	go func() {
		mux := tunnel.NewServeMux()
		mux.Handle(wire.KindCert, f.s)
		for {
			sess, err := ln.Accept(ctx)
			if err != nil {
				return
			}
			f.s.Admitted(f.reg.Add(sess))
			go func() { _ = sess.Serve(ctx, mux) }()
		}
	}()
	return f
}

// issue is a client certificate of the town's CA for id.
func (f *fixture) issue(t *testing.T, id wire.Identity) tls.Certificate {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	cert, err := f.ca.IssueClient(id, key.Public(), time.Hour, pki.SourceIssue)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{cert.Raw}, PrivateKey: key, Leaf: cert}
}

// dial connects with cert and waits for the registry to hold the session.
func (f *fixture) dial(t *testing.T, cert tls.Certificate) (*tunnel.Session, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := tunnel.Dial(ctx, f.addr, tunnel.ClientConfig{
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &cert, nil },
		RootCAs:              f.ca.Pool(),
		ServerName:           "localhost",
	})
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { s.Close() })
	id, _ := wire.IdentityFromURIs(cert.Leaf.URIs, f.ca.TrustDomain)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if _, ok := f.reg.Current(id); ok {
			return s, nil
		}
	}
	t.Fatal("the registry never held the session")
	return nil, nil
}

func (f *fixture) told() []revocation {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]revocation(nil), f.revoked...)
}

// closed waits for s to end and says why.
func closed(t *testing.T, s *tunnel.Session) error {
	t.Helper()
	select {
	case <-s.Done():
		return s.Err()
	case <-time.After(5 * time.Second):
		t.Fatal("the session was not closed")
		return nil
	}
}

// TestRevoke: revoking by identity or serial refuses the certificate's
// next handshake, closes its live tunnel and tells Revoked; the other
// polecat is untouched.
func TestRevoke(t *testing.T) {
	tests := []struct {
		name    string
		target  func(cert *x509.Certificate) string
		cutTold bool // Revoked hears the identity's cut-off
		wantErr string
		revokes int
	}{
		{"by identity", func(*x509.Certificate) string { return "gastown/furiosa" }, true, "", 1},
		{"by serial", func(c *x509.Certificate) string { return "0x" + strings.ToUpper(pki.SerialOf(c)) }, false, "", 1},
		{"unknown serial", func(*x509.Certificate) string { return "abc123" }, false, "no certificate matches", 0},
		{"garbage", func(*x509.Certificate) string { return "not a serial" }, false, "neither <rig>/<name> nor a hex serial", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, Config{})
			cert, other := f.issue(t, furiosa), f.issue(t, nux)
			s, err := f.dial(t, cert)
			if err != nil {
				t.Fatal(err)
			}
			so, err := f.dial(t, other)
			if err != nil {
				t.Fatal(err)
			}
			n, err := f.s.Revoke(tc.target(cert.Leaf))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Revoke: %v, want %q", err, tc.wantErr)
				}
				if s.Err() != nil || len(f.told()) != 0 {
					t.Errorf("a refused revocation closed the tunnel (%v) or told %v", s.Err(), f.told())
				}
				return
			}
			if err != nil || n != tc.revokes {
				t.Fatalf("Revoke: %d, %v; want %d", n, err, tc.revokes)
			}
			if err := closed(t, s); err == nil || !strings.Contains(err.Error(), "certificate revoked") {
				t.Errorf("tunnel closed with %v, want certificate revoked", err)
			}
			if err := f.s.Authorize(furiosa, cert.Leaf); !errors.Is(err, pki.ErrRevoked) {
				t.Errorf("Authorize of the revoked certificate: %v", err)
			}
			if _, err := f.dial(t, cert); !tunnel.IsAuthError(err) {
				t.Errorf("dialling with the revoked certificate: %v, want an auth error", err)
			}
			if so.Err() != nil || f.s.Authorize(nux, other.Leaf) != nil {
				t.Errorf("the other polecat's tunnel was closed (%v) or refused", so.Err())
			}
			var cut, live bool
			for _, r := range f.told() {
				if r.id != furiosa {
					t.Errorf("Revoked told of %s", r.id)
				}
				cut = cut || !r.validFrom.IsZero()
				live = live || r.validFrom.IsZero()
			}
			if !live || cut != tc.cutTold {
				t.Errorf("Revoked told %+v; want the closed tunnel, and the cut-off %v", f.told(), tc.cutTold)
			}
		})
	}
}

// TestRevokedElsewhere: a revocation written by another process (hostd cert
// revoke) is picked up by Watch, closing the live tunnel, and by the next
// handshake even without Watch.
func TestRevokedElsewhere(t *testing.T) {
	tests := []struct {
		name  string
		watch bool
	}{
		{"by Watch", true},
		{"by the next handshake", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, Config{Watch: 20 * time.Millisecond})
			cert := f.issue(t, furiosa)
			s, err := f.dial(t, cert)
			if err != nil {
				t.Fatal(err)
			}
			other, err := pki.Open(f.ca.Dir, "")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := other.Revoke("gastown/furiosa"); err != nil {
				t.Fatal(err)
			}
			if !tc.watch {
				if err := f.s.Authorize(furiosa, cert.Leaf); !errors.Is(err, pki.ErrRevoked) {
					t.Fatalf("handshake after a revocation on disk: %v, want it refused", err)
				}
				if err := closed(t, s); !strings.Contains(err.Error(), "certificate revoked") {
					t.Errorf("tunnel closed with %v", err)
				}
				return
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			go f.s.Watch(ctx)
			if err := closed(t, s); !strings.Contains(err.Error(), "certificate revoked") {
				t.Errorf("tunnel closed with %v", err)
			}
		})
	}
}

// TestAdmitted: a session added after a revocation was loaded (it passed
// its handshake just before) is closed; another polecat's is not.
func TestAdmitted(t *testing.T) {
	tests := []struct {
		id     wire.Identity
		closed bool
	}{
		{furiosa, true},
		{nux, false},
	}
	f := newFixture(t, Config{})
	if _, err := f.s.Revoke("gastown/furiosa"); err != nil {
		t.Fatal(err)
	}
	before := len(f.told())
	for _, tc := range tests {
		t.Run(tc.id.Name, func(t *testing.T) {
			_, server := tunneltest.Pair(t, tc.id)
			f.s.Admitted(registrytest.New(t).Add(server))
			if !tc.closed {
				time.Sleep(50 * time.Millisecond)
				if server.Err() != nil {
					t.Fatalf("closed: %v", server.Err())
				}
				return
			}
			if err := closed(t, server); !strings.Contains(err.Error(), "certificate revoked") {
				t.Errorf("closed with %v", err)
			}
			if told := f.told()[before:]; len(told) != 1 || told[0].id != furiosa || !told[0].validFrom.IsZero() {
				t.Errorf("Revoked told %+v, want furiosa's closed tunnel", told)
			}
		})
	}
}

func TestIssueCert(t *testing.T) {
	f := newFixture(t, Config{TTL: 2 * time.Hour})
	tests := []struct {
		ttl, want time.Duration
	}{
		{0, 2 * time.Hour},
		{30 * time.Minute, 30 * time.Minute},
	}
	for _, tc := range tests {
		issued, err := f.s.IssueCert(furiosa, tc.ttl)
		if err != nil {
			t.Fatal(err)
		}
		cert, err := pki.ParseCertPEM([]byte(issued.Cert))
		if err != nil {
			t.Fatal(err)
		}
		if issued.CN != furiosa.CommonName() || issued.Serial != pki.SerialOf(cert) || !issued.ExpiresAt.Equal(cert.NotAfter) || issued.CA != string(f.ca.CertPEM()) {
			t.Errorf("ttl %v: issued %+v does not describe its certificate", tc.ttl, issued)
		}
		if _, err := tls.X509KeyPair([]byte(issued.Cert), []byte(issued.Key)); err != nil {
			t.Errorf("ttl %v: key does not match the certificate: %v", tc.ttl, err)
		}
		if got := time.Until(cert.NotAfter); got > tc.want || got < tc.want-time.Minute {
			t.Errorf("ttl %v: valid for %v more, want %v", tc.ttl, got, tc.want)
		}
		if id, err := wire.IdentityFromURIs(cert.URIs, f.ca.TrustDomain); err != nil || id != furiosa {
			t.Errorf("ttl %v: identity %v, %v", tc.ttl, id, err)
		}
		if _, err := cert.Verify(x509.VerifyOptions{Roots: f.ca.Pool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
			t.Errorf("ttl %v: not a client certificate of the town's CA: %v", tc.ttl, err)
		}
	}
}

// TestConfig: New takes zero fields as the defaults and refuses a field
// out of its range, naming it.
func TestConfig(t *testing.T) {
	ca, _, err := pki.Init(pki.Dir(t.TempDir()), "")
	if err != nil {
		t.Fatal(err)
	}
	reg := registrytest.New(t)
	valid := func() Config {
		c := DefaultConfig()
		c.Logger = slog.New(slog.DiscardHandler)
		return c
	}
	settingstest.Run(t, valid, func(c Config) error { _, err := New(ca, reg, c); return err }, []settingstest.Case[Config]{
		{Name: "defaults"},
		{Name: "zero is the default", Set: func(c *Config) { *c = Config{Logger: c.Logger} }},
		{Name: "negative TTL", Set: func(c *Config) { c.TTL = -time.Hour }, Want: "certs: TTL is -1h0m0s: it must be above 0"},
		{Name: "no renewals", Set: func(c *Config) { c.RenewalsPerHour = -1 }, Want: "RenewalsPerHour is -1: it must be above 0"},
		{Name: "negative watch", Set: func(c *Config) { c.Watch = -time.Second }, Want: "Watch is -1s: it must be above 0"},
	})
}
