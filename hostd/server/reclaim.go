package server

import (
	"context"
	"runtime/debug"
	"time"

	"github.com/polecat-sidecar/sidecar/hostd/limits"
)

// reclaim gives memory back to the system once an attack is over: after a
// polecat floods hostd (streams, stdin, git), the garbage would otherwise
// stay in hostd's RSS until the runtime's two-minute forced collection and
// its gradual scavenger, and an operator graphing RSS would see the attack
// long after it ended. Every period it looks at the refusals so far; once
// they have stopped growing after growing, it frees memory, once. A hostd
// nobody attacks never pays for it.
func (s *Server) reclaim(ctx context.Context, period time.Duration) {
	t := time.NewTicker(period)
	defer t.Stop()
	last, pending := s.refusals(), false
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now := s.refusals()
		switch {
		case now != last:
			last, pending = now, true
		case pending:
			pending = false
			debug.FreeOSMemory()
		}
	}
}

// refusals counts everything hostd refused a peer: limits hit, streams
// refused before or on their header, handshakes shed, failed accepts.
func (s *Server) refusals() uint64 {
	n := limits.Total() + s.metrics.refusedKinds.Load()
	if ln := s.listener(); ln != nil {
		n += ln.StreamsRefused()
		for _, h := range ln.Health() {
			n += h.Shed + h.AcceptErrors
		}
	}
	return n
}
