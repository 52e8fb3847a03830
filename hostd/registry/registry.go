// Package registry is hostd's set of live tunnels: the current session of
// each polecat, older sessions draining after a newer one arrived, the
// certificates each session stands on, and notifications when a polecat
// connects or disconnects, which other services (liveness, the nudge
// queue) subscribe to.
package registry

import (
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/polecat-sidecar/sidecar/hostd/limits"
	"github.com/polecat-sidecar/sidecar/hostd/pki"
	"github.com/polecat-sidecar/sidecar/internal/settings"
	"github.com/polecat-sidecar/sidecar/tunnel"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// Config tunes the registry.
type Config struct {
	// SupersededDrain bounds how long an older session of a polecat is kept
	// for its open streams once a newer one has arrived.
	SupersededDrain time.Duration
	// MaxTunnels bounds the tunnels one polecat holds at once, its current
	// one and those draining: a newer tunnel closes the oldest draining
	// ones over it at once, so a polecat that reconnects always gets in
	// and one that opens many holds no more than this.
	MaxTunnels int
	// Logger receives connects, disconnects and forced closes.
	Logger *slog.Logger
}

// DefaultConfig is a superseded session kept up to 10 minutes for its
// open streams (a long git push, a long relayed command), and two tunnels
// per polecat: the current one and one draining.
func DefaultConfig() Config {
	return Config{
		SupersededDrain: 10 * time.Minute, // above 0
		MaxTunnels:      2,                // at least 1
		Logger:          slog.Default(),
	}
}

// Validate names each field out of its range; New calls it once zero
// fields have their defaults.
func (c Config) Validate() error {
	return errors.Join(
		settings.Positive("SupersededDrain", c.SupersededDrain),
		settings.Positive("MaxTunnels", c.MaxTunnels),
	)
}

// Event is a polecat connecting, or its current session ending. The end of
// a superseded session is no event: the polecat is still connected.
type Event struct {
	// Conn is the session concerned.
	Conn *Conn
	// Connected is true for a new current session, false for its end.
	Connected bool
	// Err says why the session ended (Connected false).
	Err error
}

// Registry is safe for concurrent use.
type Registry struct {
	cfg     Config
	log     *slog.Logger
	metrics *metrics

	mu      sync.Mutex
	current map[wire.Identity]*Conn
	all     map[*tunnel.Session]*Conn
	subs    []func(Event)
}

// New returns an empty registry; zero Config fields take DefaultConfig's.
func New(cfg Config) (*Registry, error) {
	settings.FillZero(&cfg, DefaultConfig())
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("registry: %w", err)
	}
	return &Registry{cfg: cfg, log: cfg.Logger, metrics: newMetrics(),
		current: map[wire.Identity]*Conn{}, all: map[*tunnel.Session]*Conn{}}, nil
}

// Subscribe calls f after every Event, in order, on the goroutine that
// caused it; f must not block.
func (r *Registry) Subscribe(f func(Event)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.subs = append(r.subs, f)
}

func (r *Registry) notify(ev Event) {
	r.mu.Lock()
	subs := r.subs
	r.mu.Unlock()
	for _, f := range subs {
		f(ev)
	}
}

// Add registers an authenticated session as its polecat's current one.
// Of two sessions of a polecat the older, by when each was established
// (Session.Since) rather than added, is drained: closed once its streams
// are done; draining ones beyond MaxTunnels are closed at once. A tunnel whose
// welcome took longer (its agent gave up under load and dialled again) is
// drained on arrival, with no event. The session is closed when its
// certificate expires unless Conn.Extend renews it first.
func (r *Registry) Add(sess *tunnel.Session) *Conn {
	c := newConn(sess, r.log)
	r.mu.Lock()
	cur, older := c, r.current[c.id]
	late := older != nil && sess.Since().Before(older.sess.Since())
	if late {
		cur, older = older, c
	}
	r.current[c.id] = cur
	r.all[sess] = c
	if older != nil {
		older.keep = older.sess.CloseWhenIdle(r.cfg.SupersededDrain, "superseded by a newer tunnel")
	}
	excess := r.excessLocked(cur)
	r.mu.Unlock()
	r.metrics.accepted.WithLabelValues(sess.Transport()).Inc()
	if late {
		r.log.Info("polecat's tunnel arrived after a newer one; closing it when idle", "polecat", c.id, "transport", sess.Transport(), "remote", sess.RemoteAddr())
	} else {
		r.log.Info("polecat connected", "polecat", c.id, "transport", sess.Transport(), "remote", sess.RemoteAddr(), "serial", pki.SerialOf(sess.PeerCertificate()))
		if older != nil {
			r.log.Info("polecat has a newer tunnel; closing the older one when idle", "polecat", c.id, "transport", older.sess.Transport())
		}
	}
	if len(excess) > 0 {
		limits.Hit(limits.Tunnels)
		r.log.Warn("polecat over its tunnel limit; closing its oldest draining tunnels", "polecat", c.id, "closing", len(excess), "limit", r.cfg.MaxTunnels)
		for _, e := range excess {
			_ = e.sess.CloseWithReason(fmt.Sprintf("more than %d tunnels of this polecat (max_tunnels)", r.cfg.MaxTunnels))
		}
	}
	if !late {
		r.notify(Event{Conn: c, Connected: true})
	}
	return c
}

// excessLocked lists the oldest tunnels of c's polecat beyond MaxTunnels
// (c, the current one, is never among them).
func (r *Registry) excessLocked(c *Conn) []*Conn {
	var mine []*Conn
	for _, o := range r.all {
		if o.id == c.id && o != c {
			mine = append(mine, o)
		}
	}
	if len(mine) < r.cfg.MaxTunnels {
		return nil
	}
	slices.SortFunc(mine, func(a, b *Conn) int { return a.sess.Since().Compare(b.sess.Since()) })
	return mine[:len(mine)-(r.cfg.MaxTunnels-1)]
}

// Remove forgets an ended session. When it was its polecat's current one,
// the polecat's newest tunnel still up, if one is draining, is kept and
// becomes current again (a newer tunnel its agent abandoned, under load,
// can have superseded the one it uses), and subscribers hear of it as a
// connect; else they hear of the disconnect.
func (r *Registry) Remove(c *Conn, why error) {
	c.expiry.Stop()
	r.mu.Lock()
	delete(r.all, c.sess)
	current := r.current[c.id] == c
	var back *Conn
	if current {
		delete(r.current, c.id)
		for _, o := range r.all {
			if o.id == c.id && o.keep != nil && o.sess.Err() == nil && (back == nil || o.sess.Since().After(back.sess.Since())) {
				back = o
			}
		}
		if back != nil {
			back.keep()
			back.keep = nil
			r.current[c.id] = back
		}
	}
	r.mu.Unlock()
	r.log.Info("polecat disconnected", "polecat", c.id, "transport", c.sess.Transport(), "after", time.Since(c.sess.Since()).Round(time.Millisecond), "reason", fmt.Sprint(why))
	switch {
	case back != nil:
		r.log.Info("polecat's older tunnel, still up, is current again", "polecat", c.id, "transport", back.sess.Transport(), "remote", back.sess.RemoteAddr())
		r.notify(Event{Conn: back, Connected: true})
	case current:
		r.notify(Event{Conn: c, Err: why})
	}
}

// Current is the polecat's current session, if it is connected.
func (r *Registry) Current(id wire.Identity) (*Conn, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.current[id]
	return c, ok
}

// Lookup is the registry's entry for sess, or nil.
func (r *Registry) Lookup(sess *tunnel.Session) *Conn {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.all[sess]
}

// CloseIf closes every session, current or draining, standing on a
// certificate revoked says is revoked, and returns their identities.
func (r *Registry) CloseIf(revoked func(wire.Identity, *x509.Certificate) bool, reason string) []wire.Identity {
	r.mu.Lock()
	var hit []*Conn
	for _, c := range r.all {
		if c.StandsOn(func(cert *x509.Certificate) bool { return revoked(c.id, cert) }) {
			hit = append(hit, c)
		}
	}
	r.mu.Unlock()
	ids := make([]wire.Identity, 0, len(hit))
	for _, c := range hit {
		r.log.Warn("closing tunnel: "+reason, "polecat", c.id)
		_ = c.sess.CloseWithReason(reason)
		ids = append(ids, c.id)
	}
	return ids
}

// Snapshot describes each connected polecat's current session.
func (r *Registry) Snapshot() map[wire.Identity]Info {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[wire.Identity]Info, len(r.current))
	for id, c := range r.current {
		out[id] = c.Info()
	}
	return out
}
