package server

import (
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/polecat-sidecar/sidecar/hostd/pki"
	"github.com/polecat-sidecar/sidecar/tunnel"
)

// supersededDrain bounds how long an older session of the same polecat is
// kept for its open streams once a newer one has arrived.
const supersededDrain = 10 * time.Minute

// conn is one connected tunnel in the registry.
type conn struct {
	sess *tunnel.Session
	id   tunnel.Identity

	mu       sync.Mutex
	serials  []string // the certificate it connected with, then renewals
	notAfter time.Time
	expiry   *time.Timer
}

// extend records a renewed certificate: the session may live until its
// expiry, and revoking it closes the session too.
func (c *conn) extend(serial string, notAfter time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.serials = append(c.serials, serial)
	c.notAfter = notAfter
	c.expiry.Reset(time.Until(notAfter))
}

// Registry is the set of connected polecats: the newest session of each
// identity, and older ones still draining.
type Registry struct {
	log     *slog.Logger
	mu      sync.Mutex
	current map[tunnel.Identity]*conn
	all     map[*tunnel.Session]*conn
}

func newRegistry(log *slog.Logger) *Registry {
	return &Registry{log: log, current: map[tunnel.Identity]*conn{}, all: map[*tunnel.Session]*conn{}}
}

func (r *Registry) add(sess *tunnel.Session) *conn {
	leaf := sess.PeerCertificate()
	c := &conn{sess: sess, id: sess.Peer(), serials: []string{pki.SerialOf(leaf)}, notAfter: leaf.NotAfter}
	c.expiry = time.AfterFunc(time.Until(leaf.NotAfter), func() {
		c.mu.Lock()
		na := c.notAfter
		c.mu.Unlock()
		if time.Now().Before(na) {
			return // renewed meanwhile
		}
		r.log.Warn("closing tunnel: certificate expired without renewal", "polecat", c.id, "not_after", na)
		_ = sess.CloseWithReason("certificate expired")
	})
	r.mu.Lock()
	old := r.current[c.id]
	r.current[c.id] = c
	r.all[sess] = c
	r.mu.Unlock()
	r.log.Info("polecat connected", "polecat", c.id, "transport", sess.Transport(), "remote", sess.RemoteAddr(), "serial", c.serials[0])
	if old != nil {
		go r.drain(old)
	}
	return c
}

// drain closes a superseded session once it has no open streams.
func (r *Registry) drain(c *conn) {
	r.log.Info("polecat has a newer tunnel; closing the older one when idle", "polecat", c.id, "transport", c.sess.Transport())
	deadline := time.Now().Add(supersededDrain)
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for c.sess.Streams() > 0 && time.Now().Before(deadline) {
		select {
		case <-c.sess.Done():
			return
		case <-tick.C:
		}
	}
	_ = c.sess.CloseWithReason("superseded by a newer tunnel")
}

// remove forgets a session and reports whether it was the polecat's
// current one (a superseded session's end changes nothing).
func (r *Registry) remove(c *conn, why error) bool {
	c.expiry.Stop()
	r.mu.Lock()
	delete(r.all, c.sess)
	current := r.current[c.id] == c
	if current {
		delete(r.current, c.id)
	}
	r.mu.Unlock()
	r.log.Info("polecat disconnected", "polecat", c.id, "transport", c.sess.Transport(), "after", time.Since(c.sess.Since()).Round(time.Millisecond), "reason", fmt.Sprint(why))
	return current
}

func (r *Registry) lookup(sess *tunnel.Session) *conn {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.all[sess]
}

// closeSerials closes every session whose certificates include a revoked
// serial, and returns their identities.
func (r *Registry) closeSerials(revoked map[string]bool) []tunnel.Identity {
	r.mu.Lock()
	var hit []*conn
	for _, c := range r.all {
		c.mu.Lock()
		for _, s := range c.serials {
			if revoked[s] {
				hit = append(hit, c)
				break
			}
		}
		c.mu.Unlock()
	}
	r.mu.Unlock()
	ids := make([]tunnel.Identity, 0, len(hit))
	for _, c := range hit {
		r.log.Warn("closing tunnel: certificate revoked", "polecat", c.id)
		_ = c.sess.CloseWithReason("certificate revoked")
		ids = append(ids, c.id)
	}
	return ids
}

// connInfo is what the registry knows of a polecat's current tunnel.
type connInfo struct {
	transport, remote, serial string
	since, expires            time.Time
	rtt                       time.Duration
	streams                   int
}

// snapshot maps each polecat with a current session to its tunnel.
func (r *Registry) snapshot() map[tunnel.Identity]connInfo {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[tunnel.Identity]connInfo, len(r.current))
	for id, c := range r.current {
		c.mu.Lock()
		out[id] = connInfo{
			transport: c.sess.Transport(), remote: c.sess.RemoteAddr().String(), since: c.sess.Since(),
			rtt: c.sess.RTT(), streams: c.sess.Streams(), serial: c.serials[len(c.serials)-1], expires: c.notAfter,
		}
		c.mu.Unlock()
	}
	return out
}
