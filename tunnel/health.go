package tunnel

import (
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
