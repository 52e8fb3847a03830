package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	"github.com/polecat-sidecar/sidecar/hostd/api"
	"github.com/polecat-sidecar/sidecar/hostd/registry"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// Streams is hostd serve's half of the sandbox channel: it opens a
// sandbox stream on a polecat's current tunnel for hostd run (the control
// socket's /v1/sandbox endpoint) and carries its bytes both ways, waiting
// for the polecat's agent to connect when it has not yet (a new sandbox's
// agent joins after its runtime made it). hostd run speaks the channel;
// what the agent sends is bounded where it is read, there.
type Streams struct {
	reg *registry.Registry

	mu      sync.Mutex
	waiting map[wire.Identity][]chan struct{} // closed when the polecat connects
}

// NewStreams returns the sandbox channel's host half on reg.
func NewStreams(reg *registry.Registry) *Streams {
	s := &Streams{reg: reg, waiting: map[wire.Identity][]chan struct{}{}}
	reg.Subscribe(s.connected)
	return s
}

// connected wakes those waiting for ev's polecat to connect.
func (s *Streams) connected(ev registry.Event) {
	if !ev.Connected {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ch := range s.waiting[ev.Conn.Identity()] {
		close(ch)
	}
	delete(s.waiting, ev.Conn.Identity())
}

// current is id's current tunnel, waiting up to wait for one.
func (s *Streams) current(ctx context.Context, id wire.Identity, wait time.Duration) (*registry.Conn, error) {
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		ch := make(chan struct{})
		s.mu.Lock()
		s.waiting[id] = append(s.waiting[id], ch)
		s.mu.Unlock()
		c, ok := s.reg.Current(id)
		var err error
		if !ok {
			select {
			case <-ch:
				continue // connected: the new tunnel is current
			case <-timer.C:
				err = fmt.Errorf("%w (waited %v)", api.ErrNotConnected, wait)
			case <-ctx.Done():
				err = ctx.Err()
			}
		}
		s.mu.Lock()
		if i := slices.Index(s.waiting[id], ch); i >= 0 {
			s.waiting[id] = slices.Delete(s.waiting[id], i, i+1)
		}
		s.mu.Unlock()
		return c, err
	}
}

// Open waits up to wait for id's agent, opens a sandbox stream to it and,
// once upgrade has given hostd run's connection, copies bytes both ways
// until either side ends or ctx does. An error before upgrade is the
// caller's to report; the agent refusing the stream (one older than
// hostd, which serves no such kind) reaches hostd run as a failed answer.
func (s *Streams) Open(ctx context.Context, id wire.Identity, wait time.Duration, upgrade func() (io.ReadWriteCloser, error)) error {
	c, err := s.current(ctx, id, wait)
	if err != nil {
		return err
	}
	st, err := c.Session().OpenStream(ctx, wire.KindSandbox, nil)
	if err != nil {
		return fmt.Errorf("opening %s's sandbox stream: %w", id, err)
	}
	defer st.Close()
	conn, err := upgrade()
	if err != nil {
		return err
	}
	defer conn.Close()
	done := make(chan struct{}, 2)
	go func() {
		_, _ = io.Copy(st, conn) // hostd run's request
		done <- struct{}{}
	}()
	go func() {
		n, err := io.Copy(conn, st) // the agent's answers
		if refused, ok := errors.AsType[*wire.RemoteError](err); ok && n == 0 {
			_ = wire.WriteSandboxAnswer(conn, wire.SandboxAnswer{Status: wire.SandboxFailed, Error: "the agent refused: " + refused.Reason})
		}
		done <- struct{}{}
	}()
	select {
	case <-done:
	case <-ctx.Done():
	}
	return nil
}
