package pki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

var furiosa = wire.Identity{Rig: "gastown", Name: "furiosa"}

func newCA(t *testing.T) *CA {
	t.Helper()
	ca, created, err := Init(filepath.Join(t.TempDir(), "ca"), "")
	if err != nil || !created {
		t.Fatalf("Init: %v (created %v)", err, created)
	}
	return ca
}

func TestInitCreatesAndReuses(t *testing.T) {
	ca := newCA(t)
	st, err := os.Stat(filepath.Join(ca.Dir, KeyFile))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("key mode %v, %v; want 0600", st.Mode().Perm(), err)
	}
	if st, _ := os.Stat(ca.Dir); st.Mode().Perm() != 0o700 {
		t.Errorf("CA directory mode %v, want 0700", st.Mode().Perm())
	}
	again, created, err := Init(ca.Dir, "")
	if err != nil || created {
		t.Fatalf("second Init: created=%v err=%v; want reuse", created, err)
	}
	if !again.Cert.Equal(ca.Cert) {
		t.Error("second Init made a different CA")
	}
}

// TestOpenExistingRSA reuses a CA in the form openssl writes (PKCS#1 RSA),
// as a town whose Gas Town proxy already made one would have.
func TestOpenExistingRSA(t *testing.T) {
	dir := t.TempDir()
	key, _ := rsa.GenerateKey(rand.Reader, 2048)
	tmpl := &x509.Certificate{SerialNumber: randomSerial(), Subject: pkix.Name{CommonName: "gt proxy CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().AddDate(1, 0, 0), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	der, _ := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	_ = os.WriteFile(filepath.Join(dir, CertFile), pemBlock("CERTIFICATE", der), 0o644)
	_ = os.WriteFile(filepath.Join(dir, KeyFile), pemBlock("RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(key)), 0o600)
	ca, created, err := Init(dir, "")
	if err != nil || created {
		t.Fatalf("Init over an existing RSA CA: created=%v err=%v", created, err)
	}
	if _, _, err := ca.NewClientKeyPair(furiosa, time.Hour); err != nil {
		t.Fatalf("issuing from the reused CA: %v", err)
	}
}

func TestOpenRefusesBadCA(t *testing.T) {
	good := newCA(t)
	other := newCA(t)
	certPEM, _ := os.ReadFile(filepath.Join(good.Dir, CertFile))
	keyPEM, _ := os.ReadFile(filepath.Join(good.Dir, KeyFile))
	otherKey, _ := os.ReadFile(filepath.Join(other.Dir, KeyFile))
	leafPEM, _, _ := good.NewClientKeyPair(furiosa, time.Hour)
	cases := []struct {
		name       string
		cert, key  []byte
		keyMode    os.FileMode
		wantSubstr string
	}{
		{"key readable by others", certPEM, keyPEM, 0o644, "chmod 600"},
		{"key of another CA", certPEM, otherKey, 0o600, "does not match"},
		{"garbage certificate", []byte("not pem"), keyPEM, 0o600, "no PEM CERTIFICATE"},
		{"garbage key", certPEM, []byte("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"), 0o600, "parsing PRIVATE KEY"},
		{"encrypted key", certPEM, []byte("-----BEGIN ENCRYPTED PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED PRIVATE KEY-----\n"), 0o600, "encrypted"},
		{"leaf as CA", leafPEM, keyPEM, 0o600, "not a CA"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			_ = os.WriteFile(filepath.Join(dir, CertFile), c.cert, 0o644)
			_ = os.WriteFile(filepath.Join(dir, KeyFile), c.key, c.keyMode)
			_ = os.Chmod(filepath.Join(dir, KeyFile), c.keyMode)
			_, err := Open(dir, "")
			if err == nil || !strings.Contains(err.Error(), c.wantSubstr) {
				t.Fatalf("got %v, want error containing %q", err, c.wantSubstr)
			}
			if _, _, err := Init(dir, ""); err == nil {
				t.Fatal("Init replaced or accepted a broken CA")
			}
		})
	}
	if _, _, err := Init(func() string { d := t.TempDir(); _ = os.WriteFile(filepath.Join(d, KeyFile), keyPEM, 0o600); return d }(), ""); err == nil || !strings.Contains(err.Error(), "exists but") {
		t.Errorf("Init with a key but no certificate: %v", err)
	}
}

func TestIssueClient(t *testing.T) {
	ca := newCA(t)
	certPEM, keyPEM, err := ca.NewClientKeyPair(furiosa, 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := ParseCertPEM(certPEM)
	if _, err := ParseKeyPEM(keyPEM); err != nil {
		t.Fatal(err)
	}
	if cert.Subject.CommonName != "gt-gastown-furiosa" {
		t.Errorf("CN %q", cert.Subject.CommonName)
	}
	if id, err := wire.IdentityFromURIs(cert.URIs, wire.DefaultTrustDomain); err != nil || id != furiosa {
		t.Errorf("identity %v, %v", id, err)
	}
	if _, err := cert.Verify(x509.VerifyOptions{Roots: ca.Pool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("client cert does not verify for client auth: %v", err)
	}
	if _, err := cert.Verify(x509.VerifyOptions{Roots: ca.Pool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err == nil {
		t.Error("client cert verifies for server auth")
	}
	if d := time.Until(cert.NotAfter); d < 23*time.Hour || d > 25*time.Hour {
		t.Errorf("lifetime %v, want 24h", d)
	}
	recs, _ := ca.Records()
	if len(recs) != 1 || recs[0].Serial != SerialOf(cert) || recs[0].Source != SourceIssue {
		t.Errorf("records %+v", recs)
	}

	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	for _, c := range []struct {
		id  wire.Identity
		ttl time.Duration
	}{
		{wire.Identity{Rig: "gastown", Name: "-furiosa"}, time.Hour},
		{wire.Identity{Rig: "gas/town", Name: "x"}, time.Hour},
		{wire.Identity{Rig: "", Name: "x"}, time.Hour},
		{wire.Identity{Rig: "r", Name: "x\n"}, time.Hour},
		{wire.Identity{Rig: "r", Name: "../../x"}, time.Hour},
		{furiosa, 0},
		{furiosa, -time.Hour},
		{furiosa, MaxTTL + time.Hour},
		{furiosa, 20 * 365 * 24 * time.Hour},
	} {
		if _, err := ca.IssueClient(c.id, key.Public(), c.ttl, SourceIssue); err == nil {
			t.Errorf("issued for %q ttl %v", c.id, c.ttl)
		}
	}
	small, _ := rsa.GenerateKey(rand.Reader, 1024)
	if _, err := ca.IssueClient(furiosa, small.Public(), time.Hour, SourceIssue); err == nil {
		t.Error("issued for a 1024-bit RSA key")
	}
}

func TestSignCSR(t *testing.T) {
	ca := newCA(t)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	evil, _ := url.Parse("spiffe://gastown.local/rig/gastown/polecat/nux")
	csrDER, _ := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		Subject: pkix.Name{CommonName: "gt-gastown-nux"}, URIs: []*url.URL{evil}, DNSNames: []string{"hostd"}}, key)
	cert, err := ca.SignCSR(furiosa, csrDER, time.Hour, SourceRenew)
	if err != nil {
		t.Fatal(err)
	}
	if id, _ := wire.IdentityFromURIs(cert.URIs, wire.DefaultTrustDomain); id != furiosa || len(cert.DNSNames) != 0 || cert.Subject.CommonName != "gt-gastown-furiosa" {
		t.Errorf("CSR contents leaked into the certificate: id %v, DNS %v, CN %q", id, cert.DNSNames, cert.Subject.CommonName)
	}
	if !publicKeysEqual(cert.PublicKey, key.Public()) {
		t.Error("certificate is not for the CSR's key")
	}
	tampered := append([]byte(nil), csrDER...)
	tampered[len(tampered)-5] ^= 0xff
	for name, b := range map[string][]byte{"garbage": []byte("xyz"), "empty": nil, "bad signature": tampered} {
		if _, err := ca.SignCSR(furiosa, b, time.Hour, SourceRenew); err == nil {
			t.Errorf("%s CSR signed", name)
		}
	}
}

func TestRevoke(t *testing.T) {
	ca := newCA(t)
	c1, _, _ := ca.NewClientKeyPair(furiosa, time.Hour)
	c2, _, _ := ca.NewClientKeyPair(furiosa, time.Hour)
	nux, _, _ := ca.NewClientKeyPair(wire.Identity{Rig: "gastown", Name: "nux"}, time.Hour)
	cert1, _ := ParseCertPEM(c1)
	cert2, _ := ParseCertPEM(c2)
	nuxCert, _ := ParseCertPEM(nux)

	got, err := ca.Revoke("0x" + strings.ToUpper(SerialOf(nuxCert)))
	if err != nil || len(got) != 1 {
		t.Fatalf("revoke by serial: %v %v", got, err)
	}
	got, err = ca.Revoke("gastown/furiosa")
	if err != nil || len(got) != 2 {
		t.Fatalf("revoke by name: %d records, %v; want 2", len(got), err)
	}
	reopened, err := Open(ca.Dir, "")
	if err != nil {
		t.Fatal(err)
	}
	rev, _ := reopened.Revocations()
	for _, c := range []*x509.Certificate{cert1, cert2, nuxCert} {
		if !rev.Recorded[SerialOf(c)] {
			t.Errorf("serial %s not revoked after reopening", SerialOf(c))
		}
	}
	for _, target := range []string{"", "zz", "gastown/-furiosa", "../x/y", "123abc", "gastown/furiosa/x"} {
		if _, err := ca.Revoke(target); err == nil {
			t.Errorf("Revoke(%q) succeeded", target)
		}
	}
	recs, _ := ca.Records()
	for _, r := range recs {
		if r.Status(time.Now()) != "revoked" {
			t.Errorf("record %s status %s", r.Serial, r.Status(time.Now()))
		}
	}
}

func TestJoinTokens(t *testing.T) {
	ca := newCA(t)
	tok, err := ca.CreateToken(furiosa, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := ca.RedeemToken(tok, furiosa); err != nil {
		t.Fatalf("first use: %v", err)
	}
	if err := ca.RedeemToken(tok, furiosa); err == nil || !strings.Contains(err.Error(), "already used") {
		t.Fatalf("second use: %v", err)
	}

	other, _ := ca.CreateToken(furiosa, time.Minute)
	if err := ca.RedeemToken(other, wire.Identity{Rig: "gastown", Name: "nux"}); err == nil || !strings.Contains(err.Error(), "not gastown/nux") {
		t.Fatalf("token for another name: %v", err)
	}
	if err := ca.RedeemToken(other, furiosa); err == nil {
		t.Fatal("a token presented for the wrong name stayed usable")
	}

	expiring, _ := ca.CreateToken(furiosa, time.Minute)
	ca.now = func() time.Time { return time.Now().Add(2 * time.Minute) }
	if err := ca.RedeemToken(expiring, furiosa); err == nil || !strings.Contains(err.Error(), "expired") {
		t.Fatalf("expired token: %v", err)
	}
	ca.now = time.Now

	fresh, _ := ca.CreateToken(furiosa, time.Minute)
	parts := strings.Split(fresh, ".")
	foreign := newCA(t)
	hostile := []string{
		"", "gtj1", "gtj1...", "gtj2." + strings.Join(parts[1:], "."),
		strings.Join(append(parts[:2], "AAAAAAAAAAAAAAAAAAAAAA", parts[3]), "."),
		strings.Join(append(parts[:3], "AAAA"), "."),
		strings.Join(append(parts[:3], strings.Split(mustToken(t, foreign), ".")[3]), "."),
		fresh + ".extra", strings.Replace(fresh, ".", "..", 1), fresh[:len(fresh)-2] + "\x00\n",
	}
	for _, h := range hostile {
		if err := ca.RedeemToken(h, furiosa); err == nil {
			t.Errorf("hostile token %q redeemed", h)
		}
	}
	if err := ca.RedeemToken(fresh, furiosa); err != nil {
		t.Errorf("untouched token after hostile attempts: %v", err)
	}
	for _, ttl := range []time.Duration{0, -time.Second, 8 * 24 * time.Hour} {
		if _, err := ca.CreateToken(furiosa, ttl); err == nil {
			t.Errorf("token with ttl %v created", ttl)
		}
	}
}

func mustToken(t *testing.T, ca *CA) string {
	tok, err := ca.CreateToken(furiosa, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func TestServerCert(t *testing.T) {
	ca := newCA(t)
	c, err := ca.ServerCert([]string{"localhost", "host.docker.internal"}, []net.IP{net.IPv4(127, 0, 0, 1)}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	opts := x509.VerifyOptions{Roots: ca.Pool(), DNSName: "host.docker.internal"}
	if _, err := c.Leaf.Verify(opts); err != nil {
		t.Errorf("server cert: %v", err)
	}
	// A polecat verifies hostd by its own clock, which may be hours
	// behind (a laptop's Docker VM after a sleep): a server certificate
	// issued just now by a CA made just now must verify there.
	for _, behind := range []time.Duration{2 * time.Minute, 30 * time.Minute, 6 * time.Hour} {
		opts.CurrentTime = time.Now().Add(-behind)
		if _, err := c.Leaf.Verify(opts); err != nil {
			t.Errorf("server cert verified by a clock %v behind: %v", behind, err)
		}
	}
	opts.CurrentTime = time.Time{}
	opts.KeyUsages = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	if _, err := c.Leaf.Verify(opts); err == nil {
		t.Error("server cert verifies as a client certificate")
	}
	if !c.Leaf.NotAfter.Before(time.Now().Add(time.Hour + time.Minute)) {
		t.Errorf("server cert valid until %v: its lifetime was 1 h", c.Leaf.NotAfter)
	}
}

// FuzzParseKeyPEM: arbitrary bytes as a key or certificate file never
// panic, and what parses is usable.
func FuzzParseKeyPEM(f *testing.F) {
	f.Add([]byte("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if k, err := ParseKeyPEM(b); err == nil && k.Public() == nil {
			t.Fatal("parsed a key with no public half")
		}
		if c, err := ParseCertPEM(b); err == nil && c.Raw == nil {
			t.Fatal("parsed a certificate with no DER")
		}
	})
}

// FuzzParseCSR: arbitrary bytes as a certificate request (from a joining
// or renewing container) never panic, and what parses has a checked
// signature and an accepted key.
func FuzzParseCSR(f *testing.F) {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	good, _ := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{}, key)
	f.Add(good)
	f.Add([]byte("not a csr"))
	f.Fuzz(func(t *testing.T, b []byte) {
		csr, err := ParseCSR(b)
		if err != nil {
			return
		}
		if csr.CheckSignature() != nil || checkKey(csr.PublicKey) != nil {
			t.Fatal("accepted a request with a bad signature or key")
		}
	})
}

// TestKnownNames: every name a rig was ever issued a certificate for stays
// known after its records are pruned (branch ownership depends on it).
func TestKnownNames(t *testing.T) {
	ca := newCA(t)
	clock := time.Now()
	ca.now = func() time.Time { return clock }
	for _, id := range []wire.Identity{{Rig: "gastown", Name: "bullet-farmer"}, {Rig: "gastown", Name: "bullet"}, {Rig: "beads", Name: "nux"}, {Rig: "gastown", Name: "bullet"}} {
		if _, _, err := ca.NewClientKeyPair(id, time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	clock = clock.Add(keepExpired + 2*time.Hour) // prunes all of the above at the next issue
	if _, _, err := ca.NewClientKeyPair(wire.Identity{Rig: "gastown", Name: "slit"}, time.Hour); err != nil {
		t.Fatal(err)
	}
	if recs, _ := ca.Records(); len(recs) != 1 {
		t.Fatalf("%d records after pruning, want 1", len(recs))
	}
	got, err := ca.KnownNames("gastown")
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	if want := []string{"bullet", "bullet-farmer", "slit"}; !slices.Equal(got, want) {
		t.Errorf("known names %v, want %v", got, want)
	}
	if other, _ := ca.KnownNames("beads"); !slices.Equal(other, []string{"nux"}) {
		t.Errorf("beads' names %v", other)
	}
}

// TestExpected: a polecat is expected once it was issued a certificate,
// or while it holds a join token neither spent nor expired; Issued counts
// certificates alone.
func TestExpected(t *testing.T) {
	ca := newCA(t)
	clock := time.Now()
	ca.now = func() time.Time { return clock }
	issued, pending, spent, expired := wire.Identity{Rig: "gastown", Name: "furiosa"}, wire.Identity{Rig: "gastown", Name: "nux"},
		wire.Identity{Rig: "gastown", Name: "slit"}, wire.Identity{Rig: "gastown", Name: "capable"}
	if _, _, err := ca.NewClientKeyPair(issued, time.Hour); err != nil {
		t.Fatal(err)
	}
	if _, err := ca.CreateToken(pending, time.Hour); err != nil {
		t.Fatal(err)
	}
	tok, _ := ca.CreateToken(spent, time.Hour)
	if err := ca.RedeemToken(tok, spent); err != nil {
		t.Fatal(err)
	}
	if _, err := ca.CreateToken(expired, time.Minute); err != nil {
		t.Fatal(err)
	}
	clock = clock.Add(2 * time.Minute)
	tests := []struct {
		id               wire.Identity
		issued, expected bool
	}{
		{issued, true, true},
		{pending, false, true},
		{spent, false, false}, // redeemed, but no certificate came of it
		{expired, false, false},
		{wire.Identity{Rig: "gastown", Name: "nobody"}, false, false},
		{wire.Identity{Rig: "beads", Name: "furiosa"}, false, false}, // the name in another rig
	}
	for _, tc := range tests {
		is, err := ca.Issued(tc.id)
		if err != nil || is != tc.issued {
			t.Errorf("Issued(%s) = %v, %v; want %v", tc.id, is, err, tc.issued)
		}
		exp, err := ca.Expected(tc.id)
		if err != nil || exp != tc.expected {
			t.Errorf("Expected(%s) = %v, %v; want %v", tc.id, exp, err, tc.expected)
		}
	}
}

// TestRevokeByIdentity: revoking a polecat by name revokes every
// certificate of it issued until then, recorded or not (one from Gas
// Town's own tools has no record), refuses their renewal, and lets a
// certificate issued afterwards in.
func TestRevokeByIdentity(t *testing.T) {
	ca := newCA(t)
	old, _, _ := ca.NewClientKeyPair(furiosa, time.Hour)
	oldCert, _ := ParseCertPEM(old)
	// Signed by the CA but never recorded, as Gas Town's tools would.
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	unrecorded, err := ca.sign(&x509.Certificate{SerialNumber: big.NewInt(77), NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}, key.Public())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ca.Revoke("gastown/furiosa"); err != nil {
		t.Fatal(err)
	}
	rev, err := ca.Revocations()
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]*x509.Certificate{"recorded": oldCert, "unrecorded": unrecorded} {
		if !rev.Revoked(furiosa, c) {
			t.Errorf("%s certificate from before the revocation not revoked", name)
		}
	}
	csr, _ := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{}, key)
	if _, err := ca.Renew(furiosa, oldCert, csr, time.Hour); !errors.Is(err, ErrRevoked) {
		t.Errorf("renewing a revoked certificate: %v, want ErrRevoked", err)
	}
	fresh, _, _ := ca.NewClientKeyPair(furiosa, time.Hour)
	freshCert, _ := ParseCertPEM(fresh)
	if rev, _ := ca.Revocations(); rev.Revoked(furiosa, freshCert) {
		t.Errorf("certificate issued after the revocation (not before %v) is revoked", freshCert.NotBefore)
	}
	// Usable at once: an agent refuses a certificate not yet valid.
	if now := time.Now(); freshCert.NotBefore.After(now) {
		t.Errorf("certificate issued right after the revocation is valid only from %v (now %v)", freshCert.NotBefore, now)
	}
	if _, err := ca.Renew(furiosa, freshCert, csr, time.Hour); err != nil {
		t.Errorf("renewing the new certificate: %v", err)
	}
	if rev.Revoked(wire.Identity{Rig: "gastown", Name: "nux"}, unrecorded) {
		t.Error("another polecat is revoked")
	}
}

// TestRevokeRenewRace: renewals racing a revocation by name never leave a
// certificate that is not revoked, whichever wins the lock.
func TestRevokeRenewRace(t *testing.T) {
	ca := newCA(t)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	csr, _ := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{}, key)
	for trial := range 5 {
		id := wire.Identity{Rig: "gastown", Name: fmt.Sprintf("p%d", trial)}
		certPEM, _, _ := ca.NewClientKeyPair(id, time.Hour)
		cur, _ := ParseCertPEM(certPEM)
		var issued []*x509.Certificate
		done := make(chan struct{})
		go func() {
			defer close(done)
			from := cur
			for range 30 {
				c, err := ca.Renew(id, from, csr, time.Hour)
				if err != nil {
					return
				}
				issued = append(issued, c)
				from = c
			}
		}()
		time.Sleep(time.Duration(trial) * 5 * time.Millisecond)
		if _, err := ca.Revoke(id.String()); err != nil {
			t.Fatal(err)
		}
		<-done
		rev, _ := ca.Revocations()
		for _, c := range issued {
			if !rev.Revoked(id, c) {
				t.Fatalf("trial %d: a renewal (serial %s) escaped the revocation", trial, SerialOf(c))
			}
		}
	}
}
