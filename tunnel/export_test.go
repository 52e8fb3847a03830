package tunnel

import (
	"context"
	"sync"
	"time"

	"github.com/polecat-sidecar/sidecar/tunnel/internal/connection"
)

// OpenRawStream opens a transport stream on s with nothing of the tunnel's
// own on it, for tests that play a peer writing what a Stream never would.
func OpenRawStream(ctx context.Context, s *Session) (connection.Stream, error) {
	return s.t.Open(ctx)
}

// DelayFirstWrite makes st's first write on its transport stream wait d
// before it sends, as a goroutine descheduled on a loaded machine would.
// The channel it returns is closed when that write begins.
func DelayFirstWrite(st *Stream, d time.Duration) <-chan struct{} {
	w := &slowFirstWrite{Stream: st.raw, d: d, entered: make(chan struct{})}
	st.raw = w
	return w.entered
}

type slowFirstWrite struct {
	connection.Stream
	d       time.Duration
	entered chan struct{}
	once    sync.Once
}

func (w *slowFirstWrite) Write(p []byte) (int, error) {
	first := false
	w.once.Do(func() { first = true; close(w.entered) })
	if first {
		time.Sleep(w.d)
	}
	return w.Stream.Write(p)
}
