package logging

import (
	"sync"
	"time"
)

// Limiter lets at most N log lines per key (a polecat) through in each
// window, so that a polecat cannot turn hostd's log into its own: a state
// flapping many times a second, a flood of refused requests. What it holds
// back is counted and reported with the next line let through.
type Limiter struct {
	n      int
	window time.Duration
	mu     sync.Mutex
	keys   map[string]*limitWindow
}

type limitWindow struct {
	start      time.Time
	used, held int
}

// NewLimiter lets n lines per key through per window.
func NewLimiter(n int, window time.Duration) *Limiter {
	return &Limiter{n: n, window: window, keys: map[string]*limitWindow{}}
}

// Allow says whether a line for key may be logged now, and how many lines
// for key were held back since the last one let through (for the line to
// say so).
func (l *Limiter) Allow(key string) (ok bool, held int) {
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	w := l.keys[key]
	if w == nil || now.Sub(w.start) >= l.window {
		if w == nil {
			if len(l.keys) >= 4096 {
				l.prune(now)
			}
			w = &limitWindow{}
			l.keys[key] = w
		}
		w.start, w.used = now, 0
	}
	if w.used >= l.n {
		w.held++
		return false, 0
	}
	w.used++
	held, w.held = w.held, 0
	return true, held
}

// prune forgets keys whose window has passed with nothing held back.
func (l *Limiter) prune(now time.Time) {
	for k, w := range l.keys {
		if now.Sub(w.start) >= l.window && w.held == 0 {
			delete(l.keys, k)
		}
	}
}
