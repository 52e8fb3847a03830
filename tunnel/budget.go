package tunnel

import (
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/polecat-sidecar/sidecar/internal/logging"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// abuseSlack is how far past its limit a peer may go in streams refused but
// not yet discarded before its session is closed: our own clients never
// pass the limit (they count before opening), so a peer far past it is
// hostile, and closing its session frees everything it holds at once.
const abuseSlack = 64

// peerBudget counts the streams one peer identity has open across all its
// sessions on a Listener (current and draining), so that opening more
// tunnels buys a polecat no more streams.
type peerBudget struct {
	all      *peerBudgets
	limit    int32
	open     atomic.Int32
	sessions int // guarded by peerBudgets.mu
}

// peerBudgets hands out one peerBudget per identity while it has sessions.
type peerBudgets struct {
	limit    int32
	refused  atomic.Uint64 // streams refused over a limit, all sessions
	log      *slog.Logger
	logLimit *logging.Limiter // refusals, per identity
	mu       sync.Mutex
	by       map[wire.Identity]*peerBudget
}

func newPeerBudgets(limit int, log *slog.Logger) *peerBudgets {
	return &peerBudgets{limit: int32(limit), by: map[wire.Identity]*peerBudget{}, log: log, logLimit: logging.NewLimiter(10, time.Minute)}
}

// refusedStream counts and logs (at most so often per identity) a stream
// refused over a limit.
func (p *peerBudgets) refusedStream(id wire.Identity, err error, abusive bool) {
	p.refused.Add(1)
	if ok, held := p.logLimit.Allow(id.String()); ok {
		p.log.Warn("tunnel: refused a stream over the limit", "peer", id, "err", err, "closing_tunnel", abusive, "lines_not_logged", held)
	}
}

// attach gives s its peer's budget, and returns it when s ends.
func (p *peerBudgets) attach(s *Session) {
	p.mu.Lock()
	b := p.by[s.peer]
	if b == nil {
		b = &peerBudget{all: p, limit: p.limit}
		p.by[s.peer] = b
	}
	b.sessions++
	p.mu.Unlock()
	s.budget = b
	s.t.AfterDone(func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		if b.sessions--; b.sessions == 0 {
			delete(p.by, s.peer)
		}
	})
}

// admit counts a stream the peer opened against the session's limit and
// its identity's, before anything of the stream is read. It returns a
// release func, and an error when the stream must be refused; abusive is
// true when the peer is so far past a limit that the session should end.
func (s *Session) admit() (release func(), abusive bool, err error) {
	in := s.in.Add(1)
	var peer int32
	if s.budget != nil {
		peer = s.budget.open.Add(1)
	}
	release = func() {
		s.in.Add(-1)
		if s.budget != nil {
			s.budget.open.Add(-1)
		}
	}
	switch {
	case int(in) > s.cfg.MaxStreams:
		err = fmt.Errorf("%w (%d open in this tunnel)", ErrStreamLimit, s.cfg.MaxStreams)
		abusive = int(in) > s.cfg.MaxStreams+abuseSlack
	case s.budget != nil && peer > s.budget.limit:
		err = fmt.Errorf("%w (%d open across this polecat's tunnels)", ErrStreamLimit, s.budget.limit)
		abusive = peer > s.budget.limit+abuseSlack
	}
	return release, abusive, err
}
