package guard

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/polecat-sidecar/sidecar/tunnel/internal/connection"
)

// SilenceWatch closes the QUIC tunnels of a Listener whose peer has sent
// nothing for the idle timeout: QUIC's own idle timer restarts when we send
// (RFC 9000 §10.1), so alone it could hold a frozen agent for twice as long
// (docs/protocol.md, Transports). One goroutine serves every tunnel, waking
// every idle/8: a silent peer is dropped between idle and 1.125 idle after
// it was last heard, at one wake-up per tick whatever the number of agents.
type SilenceWatch struct {
	idle  time.Duration
	mu    sync.Mutex
	conns map[*connection.QUIC]*heard
}

// heard is a tunnel's received-packet count when it last grew, and when
// the watch saw it grow.
type heard struct {
	packets uint64
	at      time.Time
}

// NewSilenceWatch watches for peers silent for idle.
func NewSilenceWatch(idle time.Duration) *SilenceWatch {
	return &SilenceWatch{idle: idle, conns: map[*connection.QUIC]*heard{}}
}

// Add watches q until it ends.
func (w *SilenceWatch) Add(q *connection.QUIC) {
	w.mu.Lock()
	w.conns[q] = &heard{packets: q.PacketsReceived(), at: time.Now()}
	w.mu.Unlock()
	q.AfterDone(func() {
		w.mu.Lock()
		delete(w.conns, q)
		w.mu.Unlock()
	})
}

// Run checks every tunnel each tick until ctx ends.
func (w *SilenceWatch) Run(ctx context.Context) {
	tick := time.NewTicker(max(w.idle/8, time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			// Now, not the tick's time: a late tick must not date what
			// it counts earlier than it was counted.
			for _, s := range w.check(time.Now()) {
				_ = s.q.Close(fmt.Sprintf("peer silent for %v", s.limit))
			}
		}
	}
}

// silent is a tunnel past its limit.
type silent struct {
	q     *connection.QUIC
	limit time.Duration
}

// check notes what each tunnel received since the last tick and returns
// those silent past their limit: the idle timeout, or, on a path slow
// enough, three probe timeouts (QUIC's own floor).
func (w *SilenceWatch) check(now time.Time) []silent {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []silent
	for q, h := range w.conns {
		if n := q.PacketsReceived(); n != h.packets {
			h.packets, h.at = n, now
			continue
		}
		if limit := max(w.idle, 3*q.PTO()); now.Sub(h.at) >= limit {
			out = append(out, silent{q, limit})
		}
	}
	return out
}
