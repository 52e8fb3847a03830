package registry

import (
	"crypto/x509"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/polecat-sidecar/sidecar/hostd/pki"
	"github.com/polecat-sidecar/sidecar/tunnel"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// Conn is one registered session and the certificates it stands on: the
// one it connected with, then each renewal.
type Conn struct {
	sess *tunnel.Session
	id   wire.Identity
	keep func() // while draining: leaves it open after all (the registry's lock)

	lastBeat atomic.Int64 // unix nanoseconds, see Beat

	mu       sync.Mutex
	certs    []*x509.Certificate
	notAfter time.Time
	expiry   *time.Timer
}

func newConn(sess *tunnel.Session, log *slog.Logger) *Conn {
	leaf := sess.PeerCertificate()
	c := &Conn{sess: sess, id: sess.Peer(), certs: []*x509.Certificate{leaf}, notAfter: leaf.NotAfter}
	c.expiry = time.AfterFunc(time.Until(leaf.NotAfter), func() {
		c.mu.Lock()
		na := c.notAfter
		c.mu.Unlock()
		if time.Now().Before(na) {
			return // renewed meanwhile
		}
		log.Warn("closing tunnel: certificate expired without renewal", "polecat", c.id, "not_after", na)
		_ = sess.CloseWithReason("certificate expired")
	})
	return c
}

// Session is the tunnel session.
func (c *Conn) Session() *tunnel.Session { return c.sess }

// Identity is the polecat, from its certificate.
func (c *Conn) Identity() wire.Identity { return c.id }

// Extend records a renewed certificate: the session may live until its
// expiry, and revoking it closes the session too.
func (c *Conn) Extend(cert *x509.Certificate) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.certs = append(c.certs, cert)
	c.notAfter = cert.NotAfter
	c.expiry.Reset(time.Until(cert.NotAfter))
}

// Beat counts a heartbeat on the session now and says whether it came at
// least gap after the previous one.
func (c *Conn) Beat(gap time.Duration) bool {
	now := time.Now().UnixNano()
	return now-c.lastBeat.Swap(now) >= int64(gap)
}

// StandsOn says whether any certificate the session stands on (the one it
// connected with, or a renewal) satisfies f.
func (c *Conn) StandsOn(f func(*x509.Certificate) bool) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.ContainsFunc(c.certs, f)
}

// Info is what the registry knows of a session, for status.
type Info struct {
	Transport, Remote string
	// Serial and Expires are of the newest certificate.
	Serial  string
	Since   time.Time
	Expires time.Time
	RTT     time.Duration
	Streams int
}

// Info describes the session now.
func (c *Conn) Info() Info {
	c.mu.Lock()
	defer c.mu.Unlock()
	return Info{
		Transport: c.sess.Transport(), Remote: c.sess.RemoteAddr().String(), Since: c.sess.Since(),
		RTT: c.sess.RTT(), Streams: c.sess.Streams(), Serial: pki.SerialOf(c.certs[len(c.certs)-1]), Expires: c.notAfter,
	}
}
