package certs

import (
	"crypto/tls"
	"net"
	"os"
	"sync"
	"time"

	"github.com/polecat-sidecar/sidecar/hostd/pki"
)

// serverCertTTL is the lifetime of hostd's own certificate; it is
// re-issued in memory when half of it has passed.
const serverCertTTL = 30 * 24 * time.Hour

// GetCertificate is hostd's server certificate, for tunnel.ServerConfig.
func (s *Service) GetCertificate(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
	return s.server.get(hello)
}

// serverCert is hostd's rotating TLS server certificate, covering
// localhost, the host's name and addresses, host.docker.internal and the
// configured extra names.
type serverCert struct {
	ca    *pki.CA
	extra []string
	mu    sync.Mutex
	cert  *tls.Certificate
}

func newServerCert(ca *pki.CA, extra []string) *serverCert {
	return &serverCert{ca: ca, extra: extra}
}

func (s *serverCert) get(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cert != nil && time.Until(s.cert.Leaf.NotAfter) > serverCertTTL/2 {
		return s.cert, nil
	}
	names, ips := serverNames(s.extra)
	c, err := s.ca.ServerCert(names, ips, serverCertTTL)
	if err != nil {
		return nil, err
	}
	s.cert = &c
	return s.cert, nil
}

// serverNames gathers the names and addresses the certificate must cover.
func serverNames(extra []string) ([]string, []net.IP) {
	names := []string{"localhost", "host.docker.internal"}
	ips := []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}
	if h, err := os.Hostname(); err == nil && h != "" {
		names = append(names, h)
	}
	if addrs, err := net.InterfaceAddrs(); err == nil {
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && !n.IP.IsLinkLocalUnicast() {
				ips = append(ips, n.IP)
			}
		}
	}
	for _, e := range extra {
		if ip := net.ParseIP(e); ip != nil {
			ips = append(ips, ip)
		} else if e != "" {
			names = append(names, e)
		}
	}
	return names, ips
}
