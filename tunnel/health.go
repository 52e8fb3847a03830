package tunnel

import (
	"net"
	"sync"
	"time"
)

// ListenerHealth is how one of a Listener's accept loops is doing, for
// hostd status and metrics: a loop that stopped, or keeps failing to
// accept (out of file descriptors), refuses every tunnel of its transport
// while everything else looks fine.
type ListenerHealth struct {
	// Transport is TransportQUIC or TransportTCP.
	Transport string `json:"transport"`
	// Up is false once the loop has stopped for good.
	Up bool `json:"up"`
	// AcceptErrors counts failed accepts (each retried after a backoff).
	AcceptErrors uint64 `json:"accept_errors"`
	// LastError is the latest accept error, and when it happened.
	LastError   string    `json:"last_error,omitempty"`
	LastErrorAt time.Time `json:"last_error_at,omitzero"`
	// Handshakes is how many handshakes are in progress (TCP).
	Handshakes int `json:"handshakes"`
	// Shed counts connections closed unanswered because too many
	// handshakes were in progress, in all or from their address (TCP).
	Shed uint64 `json:"shed"`
}

// loopHealth is one accept loop's ListenerHealth, updated as it runs.
type loopHealth struct {
	mu sync.Mutex
	h  ListenerHealth
}

func newLoopHealth(transport string) *loopHealth {
	return &loopHealth{h: ListenerHealth{Transport: transport, Up: true}}
}

func (l *loopHealth) update(f func(*ListenerHealth)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	f(&l.h)
}

func (l *loopHealth) get() ListenerHealth {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.h
}

// handshakeGate bounds the handshakes in progress, in all and per source
// address, so that connections that never finish a handshake cannot use
// up hostd's file descriptors or keep everyone else out.
type handshakeGate struct {
	max, perSource int
	mu             sync.Mutex
	total          int
	by             map[string]int
}

func newHandshakeGate(max, perSource int) *handshakeGate {
	return &handshakeGate{max: max, perSource: perSource, by: map[string]int{}}
}

// enter takes a place for a handshake from addr; ok is false when there is
// none, and done gives it back.
func (g *handshakeGate) enter(addr net.Addr) (done func(), ok bool) {
	src := addr.String()
	if ta, isTCP := addr.(*net.TCPAddr); isTCP {
		src = ta.IP.String()
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.total >= g.max || g.by[src] >= g.perSource {
		return nil, false
	}
	g.total++
	g.by[src]++
	return func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		g.total--
		if g.by[src]--; g.by[src] == 0 {
			delete(g.by, src)
		}
	}, true
}

func (g *handshakeGate) inFlight() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.total
}
