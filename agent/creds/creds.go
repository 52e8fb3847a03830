// Package creds holds gt-agent's certificate, key and CA: it loads and
// checks them with errors that say what to do, renews the certificate over
// the tunnel with a key made here (the private key never leaves the
// container), and redeems a join token for the first certificate.
package creds

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/polecat-sidecar/sidecar/internal/atomicfile"
)

// Paths are where the credentials live (GT_PROXY_CERT, GT_PROXY_KEY,
// GT_PROXY_CA).
type Paths struct {
	Cert, Key, CA string
}

// Store is the agent's current credentials. Renewal replaces them in
// place; every new handshake uses the latest.
type Store struct {
	paths Paths
	pool  *x509.CertPool

	mu   sync.RWMutex
	cert *tls.Certificate
}

// Load reads and checks the credentials: the files exist and parse, the key
// matches the certificate, the certificate is signed by the CA and is
// within its validity period.
func Load(p Paths) (*Store, error) {
	for what, path := range map[string]string{"certificate (GT_PROXY_CERT)": p.Cert, "key (GT_PROXY_KEY)": p.Key, "CA (GT_PROXY_CA)": p.CA} {
		if path == "" {
			return nil, fmt.Errorf("no %s path given", what)
		}
	}
	caPEM, err := os.ReadFile(p.CA)
	if err != nil {
		return nil, fileErr("CA certificate", p.CA, err)
	}
	ca, err := parseCert(caPEM)
	if err != nil {
		return nil, fmt.Errorf("CA certificate %s: %w", p.CA, err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	s := &Store{paths: p, pool: pool}
	certPEM, err := os.ReadFile(p.Cert)
	if err != nil {
		return nil, fileErr("certificate", p.Cert, err)
	}
	keyPEM, err := os.ReadFile(p.Key)
	if err != nil {
		return nil, fileErr("key", p.Key, err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("certificate %s with key %s: %w", p.Cert, p.Key, err)
	}
	if err := s.check(pair.Leaf, time.Now()); err != nil {
		return nil, err
	}
	s.cert = &pair
	return s, nil
}

func fileErr(what, path string, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%s %s does not exist (issue one with 'hostd cert issue', or join with --join TOKEN)", what, path)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("%s %s is not readable by this user", what, path)
	default:
		return fmt.Errorf("reading %s %s: %w", what, path, err)
	}
}

// check verifies leaf against the CA at t, for client use.
func (s *Store) check(leaf *x509.Certificate, t time.Time) error {
	if t.After(leaf.NotAfter) {
		return fmt.Errorf("certificate %s expired at %s: get a new one ('hostd cert issue' or 'hostd token create' + --join)", s.paths.Cert, leaf.NotAfter.Format(time.RFC3339))
	}
	if t.Before(leaf.NotBefore) {
		// Not refused: hostd judges the certificate by its own clock, and
		// this one is behind (a laptop's Docker VM after a sleep), so a
		// fresh certificate or renewal would otherwise lock the polecat out.
		slog.Warn("this machine's clock is behind the certificate's start: hostd judges it by its own clock; fix this clock (NTP) if it persists",
			"certificate", s.paths.Cert, "not_before", leaf.NotBefore.Format(time.RFC3339), "behind_by_at_least", leaf.NotBefore.Sub(t).Round(time.Second))
		t = leaf.NotBefore
	}
	_, err := leaf.Verify(x509.VerifyOptions{Roots: s.pool, CurrentTime: t, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	if err != nil {
		return fmt.Errorf("certificate %s is not a client certificate from CA %s: %w", s.paths.Cert, s.paths.CA, err)
	}
	return nil
}

// RootCAs verifies hostd.
func (s *Store) RootCAs() *x509.CertPool { return s.pool }

// Leaf is the current certificate.
func (s *Store) Leaf() *x509.Certificate {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.cert.Leaf
}

// GetClientCertificate hands the current certificate to a TLS handshake.
func (s *Store) GetClientCertificate(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.cert, nil
}

// RenewAt is when the current certificate should be renewed: two thirds
// into its lifetime.
func (s *Store) RenewAt() time.Time {
	l := s.Leaf()
	return l.NotBefore.Add(l.NotAfter.Sub(l.NotBefore) * 2 / 3)
}

// newKeyAndCSR makes a fresh P-256 key and a request over it.
func newKeyAndCSR() (*ecdsa.PrivateKey, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generating key: %w", err)
	}
	csr, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "gt-agent"}}, key)
	if err != nil {
		return nil, nil, fmt.Errorf("creating certificate request: %w", err)
	}
	return key, csr, nil
}

// install checks a newly issued certificate for key, saves both (key 0600,
// written before the certificate) and makes them current.
func (s *Store) install(certPEM []byte, key *ecdsa.PrivateKey) error {
	leaf, err := parseCert(certPEM)
	if err != nil {
		return fmt.Errorf("issued certificate: %w", err)
	}
	if !key.PublicKey.Equal(leaf.PublicKey) {
		return errors.New("issued certificate is not for the key we sent")
	}
	if err := s.check(leaf, time.Now()); err != nil {
		return fmt.Errorf("issued certificate: %w", err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return err
	}
	if err := atomicfile.Write(s.paths.Key, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		return fmt.Errorf("saving key: %w", err)
	}
	if err := atomicfile.Write(s.paths.Cert, certPEM, 0o644); err != nil {
		return fmt.Errorf("saving certificate: %w", err)
	}
	s.mu.Lock()
	s.cert = &tls.Certificate{Certificate: [][]byte{leaf.Raw}, PrivateKey: key, Leaf: leaf}
	s.mu.Unlock()
	return nil
}

func parseCert(b []byte) (*x509.Certificate, error) {
	blk, _ := pem.Decode(b)
	if blk == nil || blk.Type != "CERTIFICATE" {
		return nil, errors.New("no PEM CERTIFICATE block")
	}
	return x509.ParseCertificate(blk.Bytes)
}
