package certs

import (
	"crypto/x509"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/polecat-sidecar/sidecar/hostd/pki"
	"github.com/polecat-sidecar/sidecar/hostd/registry/registrytest"
)

// TestGetCertificate: hostd's server certificate is of the town's CA,
// covers localhost, host.docker.internal and the configured names and
// addresses, lasts serverCertTTL, and is issued once, not per handshake.
func TestGetCertificate(t *testing.T) {
	ca, _, err := pki.Init(pki.Dir(t.TempDir()), "")
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(ca, registrytest.New(t), Config{ServerNames: []string{"hostd.example", "10.9.8.7", ""}, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	c, err := s.GetCertificate(nil)
	if err != nil {
		t.Fatal(err)
	}
	leaf := c.Leaf
	for _, name := range []string{"localhost", "host.docker.internal", "hostd.example", "127.0.0.1", "10.9.8.7"} {
		t.Run(name, func(t *testing.T) {
			if _, err := leaf.Verify(x509.VerifyOptions{DNSName: name, Roots: ca.Pool()}); err != nil {
				t.Errorf("not valid for %s: %v", name, err)
			}
		})
	}
	if slices.Contains(leaf.DNSNames, "") || slices.ContainsFunc(leaf.IPAddresses, func(ip net.IP) bool { return ip.Equal(net.ParseIP("10.9.8.8")) }) {
		t.Errorf("names %v, addresses %v: more than was asked for", leaf.DNSNames, leaf.IPAddresses)
	}
	if life := leaf.NotAfter.Sub(time.Now()); life < serverCertTTL-time.Hour || life > serverCertTTL+time.Hour {
		t.Errorf("valid for %v more, want about %v", life, serverCertTTL)
	}
	again, err := s.GetCertificate(nil)
	if err != nil || again != c {
		t.Errorf("a second handshake got another certificate (%v)", err)
	}
}
