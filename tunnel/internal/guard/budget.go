// Package guard is a tunnel Listener's defences against peers that are
// hostile or gone: each identity's stream budget across its tunnels, the
// bound on TCP handshakes in progress, and the watch that drops a QUIC
// peer silent for the idle timeout.
package guard

import (
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/polecat-sidecar/sidecar/internal/logging"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// AbuseSlack is how far past its limit a peer may go in streams refused but
// not yet discarded before its session is closed: our own clients never
// pass the limit (they count before opening), so a peer far past it is
// hostile, and closing its session frees everything it holds at once.
const AbuseSlack = 64

// PeerBudget counts the streams one peer identity has open across all its
// sessions on a Listener (current and draining), so that opening more
// tunnels buys a polecat no more streams.
type PeerBudget struct {
	all *PeerBudgets
	// Limit is how many streams the identity may have open.
	Limit int32
	// Open is how many it has.
	Open     atomic.Int32
	sessions int // guarded by PeerBudgets.mu
}

// PeerBudgets hands out one PeerBudget per identity while it has sessions.
type PeerBudgets struct {
	limit    int32
	refused  atomic.Uint64 // streams refused over a limit, all sessions
	log      *slog.Logger
	logLimit *logging.Limiter // refusals, per identity
	mu       sync.Mutex
	by       map[wire.Identity]*PeerBudget
}

// NewPeerBudgets gives each identity limit streams, and logs refusals to log.
func NewPeerBudgets(limit int, log *slog.Logger) *PeerBudgets {
	return &PeerBudgets{limit: int32(limit), by: map[wire.Identity]*PeerBudget{}, log: log, logLimit: logging.NewLimiter(10, time.Minute)}
}

// Refused is how many streams were refused over a limit, in all sessions.
func (p *PeerBudgets) Refused() uint64 { return p.refused.Load() }

// RefusedStream counts and logs (at most so often per identity) a stream
// of id refused over a limit.
func (b *PeerBudget) RefusedStream(id wire.Identity, err error, abusive bool) {
	p := b.all
	p.refused.Add(1)
	if ok, held := p.logLimit.Allow(id.String()); ok {
		p.log.Warn("tunnel: refused a stream over the limit", "peer", id, "err", err, "closing_tunnel", abusive, "lines_not_logged", held)
	}
}

// Join is the budget of id for a new session of it; the caller calls
// Leave when that session ends.
func (p *PeerBudgets) Join(id wire.Identity) *PeerBudget {
	p.mu.Lock()
	defer p.mu.Unlock()
	b := p.by[id]
	if b == nil {
		b = &PeerBudget{all: p, Limit: p.limit}
		p.by[id] = b
	}
	b.sessions++
	return b
}

// Leave gives back b, id's budget, for a session that ended.
func (p *PeerBudgets) Leave(id wire.Identity, b *PeerBudget) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if b.sessions--; b.sessions == 0 {
		delete(p.by, id)
	}
}
