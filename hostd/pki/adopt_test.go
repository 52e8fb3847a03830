package pki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// proxyCA writes a CA into dir as gt-proxy-server does (ca.crt, and
// ca.key as a SEC 1 "EC PRIVATE KEY", 0600) and returns its certificate.
func proxyCA(t *testing.T, dir string) *x509.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(42), Subject: pkix.Name{CommonName: "gt-proxy CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().AddDate(1, 0, 0), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, _ := x509.MarshalECPrivateKey(key)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	_ = os.WriteFile(filepath.Join(dir, CertFile), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644)
	_ = os.WriteFile(filepath.Join(dir, KeyFile), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600)
	cert, _ := x509.ParseCertificate(der)
	return cert
}

func TestProxyCADir(t *testing.T) {
	for _, tc := range []struct {
		name, config, want string
	}{
		{"no config: its default", "", "gt/.runtime/ca"},
		{"config names a ca_dir", `{"listen_addr": ":9876", "ca_dir": "/srv/proxy-ca"}`, "/srv/proxy-ca"},
		{"config without one", `{"listen_addr": ":9876"}`, "gt/.runtime/ca"},
		{"config unreadable", `{"ca_dir": `, "gt/.runtime/ca"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			home := t.TempDir()
			if tc.config != "" {
				p := filepath.Join(home, "gt", ".runtime", "proxy", "config.json")
				_ = os.MkdirAll(filepath.Dir(p), 0o700)
				_ = os.WriteFile(p, []byte(tc.config), 0o600)
			}
			want := tc.want
			if !filepath.IsAbs(want) {
				want = filepath.Join(home, want)
			}
			if got := ProxyCADir(home); got != want {
				t.Errorf("%s, want %s", got, want)
			}
		})
	}
}

// TestAdopt: gt-proxy-server's CA copied into the town is the same CA (a
// certificate issued by either verifies against the other), its key 0600
// in a 0700 directory; a town that has a CA file, or a source without a
// CA, is refused.
func TestAdopt(t *testing.T) {
	from := filepath.Join(t.TempDir(), "proxy-ca")
	orig := proxyCA(t, from)
	dir := Dir(t.TempDir())
	ca, err := Adopt(from, dir, "")
	if err != nil {
		t.Fatal(err)
	}
	if !ca.Cert.Equal(orig) {
		t.Error("the adopted CA is not gt-proxy-server's")
	}
	if st, _ := os.Stat(filepath.Join(dir, KeyFile)); st.Mode().Perm() != 0o600 {
		t.Errorf("key mode %v", st.Mode().Perm())
	}
	if st, _ := os.Stat(dir); st.Mode().Perm() != 0o700 {
		t.Errorf("directory mode %v", st.Mode().Perm())
	}
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	leaf, err := ca.IssueClient(wire.Identity{Rig: "gastown", Name: "nux"}, key.Public(), time.Hour, SourceIssue)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(orig)
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("a certificate the adopted CA issued does not verify against gt-proxy-server's: %v", err)
	}
	if _, err := Adopt(from, dir, ""); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("adopting over a CA: %v", err)
	}
	if _, err := Adopt(t.TempDir(), Dir(t.TempDir()), ""); err == nil || !strings.Contains(err.Error(), "no CA at") {
		t.Errorf("adopting from a directory without a CA: %v", err)
	}
}
