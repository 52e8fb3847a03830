package limits

import (
	"sync"
	"time"

	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// Rate is a token bucket per polecat: a burst of n, refilled at n per
// period.
type Rate struct {
	n      float64
	period time.Duration
	mu     sync.Mutex
	by     map[wire.Identity]*bucket
}

type bucket struct {
	tokens float64
	at     time.Time
}

// NewRate lets each polecat do something n times per period, n at once.
func NewRate(n int, period time.Duration) *Rate {
	return &Rate{n: float64(n), period: period, by: map[wire.Identity]*bucket{}}
}

// Take spends one of id's tokens; when there is none it says how long
// until there is.
func (r *Rate) Take(id wire.Identity) (ok bool, wait time.Duration) {
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	b := r.by[id]
	if b == nil {
		b = &bucket{tokens: r.n, at: now}
		r.by[id] = b
	}
	b.tokens = min(r.n, b.tokens+now.Sub(b.at).Seconds()*r.n/r.period.Seconds())
	b.at = now
	if b.tokens < 1 {
		return false, time.Duration((1 - b.tokens) * float64(r.period) / r.n)
	}
	b.tokens--
	return true, 0
}
