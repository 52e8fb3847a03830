package limits

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// ErrBusy is a wait for a slot that ran out.
var ErrBusy = errors.New("no free slot")

// Slots bounds how many of something (commands, processes) each polecat
// has running at once.
type Slots struct {
	n  int
	mu sync.Mutex
	by map[wire.Identity]chan struct{}
}

// NewSlots gives each polecat n slots.
func NewSlots(n int) *Slots { return &Slots{n: n, by: map[wire.Identity]chan struct{}{}} }

// Take waits up to wait (or until ctx ends) for one of id's slots;
// release gives it back. Out of time, the error is ErrBusy.
func (s *Slots) Take(ctx context.Context, id wire.Identity, wait time.Duration) (release func(), err error) {
	s.mu.Lock()
	ch := s.by[id]
	if ch == nil {
		ch = make(chan struct{}, s.n)
		s.by[id] = ch
	}
	s.mu.Unlock()
	return take(ctx, ch, wait)
}

// take waits up to wait (or until ctx ends) for a place in ch.
func take(ctx context.Context, ch chan struct{}, wait time.Duration) (func(), error) {
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case ch <- struct{}{}:
		return func() { <-ch }, nil
	case <-t.C:
		return nil, ErrBusy
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Pool is a number of slots shared by every polecat.
type Pool chan struct{}

// NewPool makes a pool of n slots.
func NewPool(n int) Pool { return make(Pool, n) }

// Take waits up to wait (or until ctx ends) for a slot of the pool.
func (p Pool) Take(ctx context.Context, wait time.Duration) (release func(), err error) {
	return take(ctx, p, wait)
}
