package tunnel

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/polecat-sidecar/sidecar/tunnel/internal/connection"
)

// silenceWatch closes the QUIC tunnels of a Listener whose peer has sent
// nothing for the idle timeout.
//
// QUIC's own idle timer is not enough for hostd: RFC 9000 §10.1 restarts
// it when we send an ack-eliciting packet after the peer's last one, so a
// frozen agent that hostd keeps writing to (a nudge, a peek, a command's
// output) is dropped only after up to twice the idle timeout. The watch
// judges what was received alone, as the TCP transport's pings do. A
// healthy agent is always heard within the idle timeout: it pings after
// its keepalive (at most half of it) without hearing hostd, and
// acknowledges whatever hostd sends.
//
// One goroutine serves every tunnel, waking every idle/8, so a silent
// peer is dropped between idle and 1.125 idle after it was last heard, at
// one wake-up per tick whatever the number of agents.
type silenceWatch struct {
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

func newSilenceWatch(idle time.Duration) *silenceWatch {
	return &silenceWatch{idle: idle, conns: map[*connection.QUIC]*heard{}}
}

// add watches q until it ends.
func (w *silenceWatch) add(q *connection.QUIC) {
	w.mu.Lock()
	w.conns[q] = &heard{packets: q.PacketsReceived(), at: time.Now()}
	w.mu.Unlock()
	q.AfterDone(func() {
		w.mu.Lock()
		delete(w.conns, q)
		w.mu.Unlock()
	})
}

// run checks every tunnel each tick until ctx ends.
func (w *silenceWatch) run(ctx context.Context) {
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
func (w *silenceWatch) check(now time.Time) []silent {
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
