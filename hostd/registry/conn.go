package registry

import (
	"log/slog"
	"sync"
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

	mu       sync.Mutex
	serials  []string
	notAfter time.Time
	expiry   *time.Timer
}

func newConn(sess *tunnel.Session, log *slog.Logger) *Conn {
	leaf := sess.PeerCertificate()
	c := &Conn{sess: sess, id: sess.Peer(), serials: []string{pki.SerialOf(leaf)}, notAfter: leaf.NotAfter}
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
func (c *Conn) Extend(serial string, notAfter time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.serials = append(c.serials, serial)
	c.notAfter = notAfter
	c.expiry.Reset(time.Until(notAfter))
}

func (c *Conn) anySerial(set map[string]bool) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.serials {
		if set[s] {
			return true
		}
	}
	return false
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
		RTT: c.sess.RTT(), Streams: c.sess.Streams(), Serial: c.serials[len(c.serials)-1], Expires: c.notAfter,
	}
}
