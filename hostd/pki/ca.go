// Package pki is hostd's certificate authority: it creates or reuses the
// CA at <town>/.runtime/ca, issues short-lived polecat certificates that
// carry the identity in a SPIFFE URI SAN, signs renewal requests whose key
// never left the container, mints hostd's own server certificate, and keeps
// the persisted record of issued and revoked certificates and of one-time
// join tokens.
package pki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// File names inside the CA directory.
const (
	CertFile   = "ca.crt"
	KeyFile    = "ca.key"
	recordFile = "certs.json"
	namesFile  = "polecats.json"
	tokenFile  = "tokens.json"
	lockFile   = ".lock"
)

// Limits on what may be issued.
const (
	// DefaultTTL is a polecat certificate's default lifetime.
	DefaultTTL = 24 * time.Hour
	// MaxTTL is the longest lifetime hostd issues.
	MaxTTL = 90 * 24 * time.Hour
	// MinTTL is the shortest (renewal needs room to happen).
	MinTTL = 5 * time.Second
	// clockSkew backdates a polecat certificate's NotBefore so a
	// container whose clock runs a little behind still accepts a fresh
	// certificate (a tenth of a short lifetime at most, so short-lived
	// certificates stay short). gt-agent does not refuse its own
	// certificate for a clock further behind (hostd judges it by its own).
	clockSkew = time.Minute
	// caClockSkew backdates a new CA's NotBefore, and so hostd's server
	// certificate's, which starts with its CA: a container verifies
	// hostd by its own clock, and a laptop's Docker VM can wake from a
	// sleep hours behind. A new town's CA must not be "not yet valid"
	// to it.
	caClockSkew = 24 * time.Hour
)

// CA is an opened certificate authority directory.
type CA struct {
	// Dir is the CA directory, normally <town>/.runtime/ca.
	Dir string
	// Cert is the CA certificate.
	Cert *x509.Certificate
	// TrustDomain is the SPIFFE trust domain of issued identities.
	TrustDomain string

	key crypto.Signer
	now func() time.Time
}

// Dir returns the CA directory for a town root.
func Dir(town string) string { return filepath.Join(town, ".runtime", "ca") }

// Init opens the CA in dir, creating it (key 0600, directory 0700) when
// there is none. It reports whether it created one. An existing CA,
// including one made by Gas Town's proxy, is reused as it is.
func Init(dir, trustDomain string) (*CA, bool, error) {
	ca, err := Open(dir, trustDomain)
	if err == nil {
		return ca, false, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, false, err
	}
	if _, statErr := os.Stat(filepath.Join(dir, KeyFile)); statErr == nil {
		return nil, false, fmt.Errorf("creating the CA: %s exists but %s does not: restore the certificate, or move the key away", filepath.Join(dir, KeyFile), CertFile)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, false, fmt.Errorf("creating CA directory: %w", err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, false, fmt.Errorf("generating CA key: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          randomSerial(),
		Subject:               pkix.Name{CommonName: "Gas Town polecat CA", Organization: []string{"Gas Town"}},
		NotBefore:             now.Add(-caClockSkew),
		NotAfter:              now.AddDate(10, 0, 0),
		IsCA:                  true,
		BasicConstraintsValid: true,
		MaxPathLenZero:        true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, false, fmt.Errorf("self-signing CA: %w", err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, false, fmt.Errorf("encoding CA key: %w", err)
	}
	// Key first, exclusively: two racing inits cannot both win.
	if err := writeNew(filepath.Join(dir, KeyFile), pemBlock("PRIVATE KEY", keyDER), 0o600); err != nil {
		return nil, false, fmt.Errorf("writing CA key: %w", err)
	}
	if err := writeNew(filepath.Join(dir, CertFile), pemBlock("CERTIFICATE", der), 0o644); err != nil {
		return nil, false, fmt.Errorf("writing CA certificate: %w", err)
	}
	ca, err = Open(dir, trustDomain)
	return ca, err == nil, err
}

// Open loads the CA in dir. The error wraps fs.ErrNotExist when there is
// none, and says what to do.
func Open(dir, trustDomain string) (*CA, error) {
	if trustDomain == "" {
		trustDomain = wire.DefaultTrustDomain
	}
	certPEM, err := os.ReadFile(filepath.Join(dir, CertFile))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("no CA at %s (run 'hostd ca init'): %w", dir, err)
		}
		return nil, fmt.Errorf("reading CA certificate: %w", err)
	}
	cert, err := ParseCertPEM(certPEM)
	if err != nil {
		return nil, fmt.Errorf("CA certificate %s: %w", filepath.Join(dir, CertFile), err)
	}
	if !cert.IsCA {
		return nil, fmt.Errorf("CA certificate %s is not a CA (basic constraints)", filepath.Join(dir, CertFile))
	}
	keyPath := filepath.Join(dir, KeyFile)
	if st, err := os.Stat(keyPath); err == nil && st.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("CA key %s has mode %v: run 'chmod 600 %s'", keyPath, st.Mode().Perm(), keyPath)
	}
	keyPEM, err := os.ReadFile(keyPath)
	if err != nil {
		return nil, fmt.Errorf("reading CA key: %w", err)
	}
	key, err := ParseKeyPEM(keyPEM)
	if err != nil {
		return nil, fmt.Errorf("CA key %s: %w", keyPath, err)
	}
	if !publicKeysEqual(key.Public(), cert.PublicKey) {
		return nil, fmt.Errorf("CA key %s does not match certificate %s", keyPath, filepath.Join(dir, CertFile))
	}
	return &CA{Dir: dir, Cert: cert, TrustDomain: trustDomain, key: key, now: time.Now}, nil
}

// Pool is a certificate pool holding just this CA.
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.Cert)
	return p
}

// CertPEM is the CA certificate in PEM, as handed to polecats.
func (ca *CA) CertPEM() []byte { return pemBlock("CERTIFICATE", ca.Cert.Raw) }

// IssueClient signs a polecat certificate for id over pub, valid for ttl,
// and records it. source says how it was asked for (issue, join, renew).
func (ca *CA) IssueClient(id wire.Identity, pub crypto.PublicKey, ttl time.Duration, source string) (*x509.Certificate, error) {
	return ca.issueClient(id, pub, ttl, source, nil)
}

// issueClient signs and records under the CA lock. With from set (a
// renewal), it refuses if from is revoked, decided under the same lock as
// Revoke, so a revocation and a renewal cannot interleave.
func (ca *CA) issueClient(id wire.Identity, pub crypto.PublicKey, ttl time.Duration, source string, from *x509.Certificate) (*x509.Certificate, error) {
	if err := id.Validate(); err != nil {
		return nil, fmt.Errorf("refusing to issue: %w", err)
	}
	if ttl < MinTTL || ttl > MaxTTL {
		return nil, fmt.Errorf("refusing to issue: ttl %v outside %v..%v", ttl, MinTTL, MaxTTL)
	}
	if err := checkKey(pub); err != nil {
		return nil, fmt.Errorf("refusing to issue: %w", err)
	}
	var cert *x509.Certificate
	err := ca.withLock(func() error {
		rev, recs, err := ca.loadRevocationsLocked()
		if err != nil {
			return err
		}
		if from != nil && rev.Revoked(id, from) {
			return fmt.Errorf("refusing to renew: %w", ErrRevoked)
		}
		now := ca.now()
		notAfter := now.Add(ttl)
		if notAfter.After(ca.Cert.NotAfter) {
			return fmt.Errorf("refusing to issue: certificate would outlive the CA (expires %s)", ca.Cert.NotAfter.Format(time.RFC3339))
		}
		tmpl := &x509.Certificate{
			SerialNumber: randomSerial(),
			Subject:      pkix.Name{CommonName: id.CommonName()},
			URIs:         []*url.URL{id.URI(ca.TrustDomain)},
			NotBefore:    now.Add(-min(clockSkew, ttl/10)),
			NotAfter:     notAfter,
			KeyUsage:     x509.KeyUsageDigitalSignature,
			ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		}
		if cert, err = ca.sign(tmpl, pub); err != nil {
			return err
		}
		if err := ca.recordLocked(recs, Record{Serial: SerialOf(cert), Identity: id, NotBefore: cert.NotBefore, NotAfter: cert.NotAfter, Source: source}); err != nil {
			return fmt.Errorf("recording issued certificate: %w", err)
		}
		return nil
	})
	return cert, err
}

// NewClientKeyPair generates a key and issues a certificate for it; used
// where the operator hands both to a container (hostd cert issue). Joining
// and renewing containers make their own keys instead.
func (ca *CA) NewClientKeyPair(id wire.Identity, ttl time.Duration) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generating key: %w", err)
	}
	cert, err := ca.IssueClient(id, key.Public(), ttl, SourceIssue)
	if err != nil {
		return nil, nil, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, fmt.Errorf("encoding key: %w", err)
	}
	return pemBlock("CERTIFICATE", cert.Raw), pemBlock("PRIVATE KEY", keyDER), nil
}

// ParseCSR parses a PKCS#10 request and checks its self-signature and key
// type, so that a bad request can be refused before anything is spent on
// it.
func ParseCSR(der []byte) (*x509.CertificateRequest, error) {
	csr, err := x509.ParseCertificateRequest(der)
	if err != nil {
		return nil, fmt.Errorf("parsing certificate request: %w", err)
	}
	if err := csr.CheckSignature(); err != nil {
		return nil, fmt.Errorf("certificate request signature: %w", err)
	}
	if err := checkKey(csr.PublicKey); err != nil {
		return nil, fmt.Errorf("certificate request: %w", err)
	}
	return csr, nil
}

// SignCSR issues a certificate for id over the key in a PKCS#10 request.
// Everything else the request says (subject, SANs) is ignored: the
// identity is the caller's.
func (ca *CA) SignCSR(id wire.Identity, csrDER []byte, ttl time.Duration, source string) (*x509.Certificate, error) {
	csr, err := ParseCSR(csrDER)
	if err != nil {
		return nil, err
	}
	return ca.IssueClient(id, csr.PublicKey, ttl, source)
}

// Renew issues a certificate for id over the key in a PKCS#10 request to
// a polecat presenting from, unless from is revoked (ErrRevoked).
func (ca *CA) Renew(id wire.Identity, from *x509.Certificate, csrDER []byte, ttl time.Duration) (*x509.Certificate, error) {
	csr, err := ParseCSR(csrDER)
	if err != nil {
		return nil, err
	}
	return ca.issueClient(id, csr.PublicKey, ttl, SourceRenew, from)
}

// ServerCert issues hostd's TLS server certificate for the given DNS names
// and IP addresses.
func (ca *CA) ServerCert(names []string, ips []net.IP, ttl time.Duration) (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("generating server key: %w", err)
	}
	now := ca.now()
	tmpl := &x509.Certificate{
		SerialNumber: randomSerial(),
		Subject:      pkix.Name{CommonName: "hostd"},
		DNSNames:     names,
		IPAddresses:  ips,
		// Valid from its CA's start: a polecat whose clock is behind
		// verifies hostd by that clock (backdating a server certificate
		// extends nothing: it is reissued at every start).
		NotBefore:   ca.Cert.NotBefore,
		NotAfter:    earliest(now.Add(ttl), ca.Cert.NotAfter),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	cert, err := ca.sign(tmpl, key.Public())
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{cert.Raw, ca.Cert.Raw}, PrivateKey: key, Leaf: cert}, nil
}

func (ca *CA) sign(tmpl *x509.Certificate, pub crypto.PublicKey) (*x509.Certificate, error) {
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, pub, ca.key)
	if err != nil {
		return nil, fmt.Errorf("signing certificate: %w", err)
	}
	return x509.ParseCertificate(der)
}

// SerialOf is a certificate's serial as hostd shows it: lowercase hex.
func SerialOf(c *x509.Certificate) string { return c.SerialNumber.Text(16) }

func randomSerial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		panic("pki: crypto/rand failed: " + err.Error())
	}
	return n.Add(n, big.NewInt(1))
}

// checkKey accepts ECDSA P-256/P-384 and RSA of 2048 bits or more.
func checkKey(pub crypto.PublicKey) error {
	switch k := pub.(type) {
	case *ecdsa.PublicKey:
		if k.Curve != elliptic.P256() && k.Curve != elliptic.P384() {
			return fmt.Errorf("ECDSA curve %s not accepted (use P-256)", k.Curve.Params().Name)
		}
	case *rsa.PublicKey:
		if k.N.BitLen() < 2048 {
			return fmt.Errorf("RSA key of %d bits is too short (want 2048+)", k.N.BitLen())
		}
	default:
		return fmt.Errorf("key type %T not accepted (use ECDSA P-256)", pub)
	}
	return nil
}

func publicKeysEqual(a, b crypto.PublicKey) bool {
	ka, ok := a.(interface{ Equal(crypto.PublicKey) bool })
	return ok && ka.Equal(b)
}

func earliest(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
