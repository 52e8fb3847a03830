// Package tunneltest provides what tests of the tunnel and its users need
// around real connections: a throw-away CA that can also mint deliberately
// bad certificates, and a relay that can block UDP, cut, or delay traffic
// between two real sockets.
package tunneltest

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net"
	"time"

	"github.com/polecat-sidecar/sidecar/tunnel"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// T is the part of testing.TB the certificate helpers use, so that
// runnable examples can use them too (with a T that panics).
type T interface {
	Helper()
	Fatalf(format string, args ...any)
}

// CA is an in-memory certificate authority for tests.
type CA struct {
	Cert *x509.Certificate
	Key  crypto.Signer
	Pool *x509.CertPool
}

// NewCA makes a fresh CA.
func NewCA(t T) *CA {
	t.Helper()
	key := newKey(t)
	tmpl := &x509.Certificate{
		SerialNumber:          serial(t),
		Subject:               pkix.Name{CommonName: "tunneltest CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatalf("creating test CA: %v", err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &CA{Cert: cert, Key: key, Pool: pool}
}

// LeafOption adjusts a leaf certificate template before signing.
type LeafOption func(*x509.Certificate)

// Validity sets the certificate's validity window.
func Validity(notBefore, notAfter time.Time) LeafOption {
	return func(c *x509.Certificate) { c.NotBefore, c.NotAfter = notBefore, notAfter }
}

// ServerUsage makes the leaf a server certificate (EKU serverAuth only).
func ServerUsage(c *x509.Certificate) { c.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth} }

// Client issues a client certificate for id in wire.DefaultTrustDomain.
func (ca *CA) Client(t T, id wire.Identity, opts ...LeafOption) tls.Certificate {
	t.Helper()
	tmpl := &x509.Certificate{
		Subject:     pkix.Name{CommonName: id.CommonName()},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if !id.IsZero() {
		tmpl.URIs = append(tmpl.URIs, id.URI(wire.DefaultTrustDomain))
	}
	return ca.leaf(t, tmpl, opts)
}

// Server issues a server certificate for localhost and 127.0.0.1.
func (ca *CA) Server(t T, opts ...LeafOption) tls.Certificate {
	t.Helper()
	tmpl := &x509.Certificate{
		Subject:     pkix.Name{CommonName: "hostd"},
		DNSNames:    []string{"localhost"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	return ca.leaf(t, tmpl, opts)
}

func (ca *CA) leaf(t T, tmpl *x509.Certificate, opts []LeafOption) tls.Certificate {
	t.Helper()
	key := newKey(t)
	tmpl.SerialNumber = serial(t)
	tmpl.NotBefore = time.Now().Add(-time.Minute)
	tmpl.NotAfter = time.Now().Add(time.Hour)
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	for _, o := range opts {
		o(tmpl)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, key.Public(), ca.Key)
	if err != nil {
		t.Fatalf("issuing test certificate: %v", err)
	}
	leaf, _ := x509.ParseCertificate(der)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}
}

// ServerConfig is a tunnel.ServerConfig serving cert and trusting ca.
func (ca *CA) ServerConfig(cert tls.Certificate) tunnel.ServerConfig {
	return tunnel.ServerConfig{
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return &cert, nil },
		ClientCAs:      ca.Pool,
	}
}

// ClientConfig is a tunnel.ClientConfig presenting cert and trusting ca for
// the server name "localhost".
func (ca *CA) ClientConfig(cert tls.Certificate) tunnel.ClientConfig {
	return tunnel.ClientConfig{
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &cert, nil },
		RootCAs:              ca.Pool,
		ServerName:           "localhost",
	}
}

func newKey(t T) *ecdsa.PrivateKey {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatalf("generating key: %v", err)
	}
	return key
}

func serial(t T) *big.Int {
	t.Helper()
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		t.Fatalf("generating serial: %v", err)
	}
	return n
}
