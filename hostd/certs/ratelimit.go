package certs

import (
	"sync"
	"time"

	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// rateLimiter is a token bucket per polecat: a burst of n, refilled at n
// per period.
type rateLimiter struct {
	n      float64
	period time.Duration
	mu     sync.Mutex
	by     map[wire.Identity]*bucket
}

type bucket struct {
	tokens float64
	at     time.Time
}

func newRateLimiter(n int, period time.Duration) *rateLimiter {
	return &rateLimiter{n: float64(n), period: period, by: map[wire.Identity]*bucket{}}
}

// take spends one of id's tokens; when there is none it says how long
// until there is.
func (r *rateLimiter) take(id wire.Identity) (ok bool, wait time.Duration) {
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
