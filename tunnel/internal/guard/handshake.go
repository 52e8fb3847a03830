package guard

import (
	"net"
	"sync"
)

// HandshakeGate bounds the handshakes in progress, in all and per source
// address, so that connections that never finish a handshake cannot use
// up hostd's file descriptors or keep everyone else out.
type HandshakeGate struct {
	max, perSource int
	mu             sync.Mutex
	total          int
	by             map[string]int
}

// NewHandshakeGate lets max handshakes in at once, perSource of them from
// one address.
func NewHandshakeGate(max, perSource int) *HandshakeGate {
	return &HandshakeGate{max: max, perSource: perSource, by: map[string]int{}}
}

// Enter takes a place for a handshake from addr; ok is false when there is
// none, and done gives it back.
func (g *HandshakeGate) Enter(addr net.Addr) (done func(), ok bool) {
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

// InFlight is how many handshakes are in progress.
func (g *HandshakeGate) InFlight() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.total
}
