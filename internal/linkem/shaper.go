package linkem

import (
	"math/rand/v2"
	"time"
)

// fate is what the link does with a packet.
type fate int

const (
	delivered fate = iota // delivered at the time admit gives
	lost                  // dropped by the random loss
	overflow              // dropped because the rate limiter's queue was full
)

// shaper decides each packet's fate in one direction, on the link's own
// clock (time since it started): the scheduling core, with no kernel and
// no goroutine, so that a test can feed it synthetic timelines.
type shaper struct {
	shape Shape
	rng   *rand.Rand
	// bad is the Gilbert-Elliott state.
	bad bool
	// empty is when the token bucket was (or would have been) empty, had
	// it been filling since: at time t it holds (t-empty)·rate bytes, up
	// to its depth. ready is when the last packet left it (FIFO).
	empty, ready time.Duration
	// waiting are the packets that have not left the bucket yet, oldest
	// first, and backlog their bytes.
	waiting []waiter
	backlog int
}

// waiter is a packet waiting for the token bucket.
type waiter struct {
	leaves time.Duration
	size   int
}

// newShaper gives the shaper of one direction: s sized for mtu, its
// random decisions from the PCG stream (seed, stream).
func newShaper(s Shape, mtu int, seed, stream uint64) *shaper {
	s = s.sized(mtu)
	sh := &shaper{shape: s, rng: rand.New(rand.NewPCG(seed, stream))}
	if s.Rate > 0 {
		sh.empty = -sh.cost(s.Bucket) // full at the start
	}
	return sh
}

// admit decides the fate of a packet of size bytes that enters the link
// at now and, when it is delivered, when it reaches the other end. Every
// packet draws the same four numbers, dropped or not, so that its random
// decisions depend only on the seed and its place in the stream.
func (sh *shaper) admit(now time.Duration, size int) (time.Duration, fate) {
	uState, uLoss, uJitter, uReorder := sh.rng.Float64(), sh.rng.Float64(), sh.rng.Float64(), sh.rng.Float64()
	if sh.drops(uState, uLoss) {
		return 0, lost
	}
	left := now
	if sh.shape.Rate > 0 {
		var ok bool
		if left, ok = sh.bucket(now, size); !ok {
			return 0, overflow
		}
	}
	if uReorder < sh.shape.Reorder {
		return left, delivered
	}
	delay := sh.shape.Delay + time.Duration((2*uJitter-1)*float64(sh.shape.Jitter))
	return left + max(delay, 0), delivered
}

// drops applies the random loss: Bursts' model when set (the loss of the
// current state, then the move), else Loss.
func (sh *shaper) drops(uState, uLoss float64) bool {
	g := sh.shape.Bursts
	if g == nil {
		return uLoss < sh.shape.Loss
	}
	p := g.LossGood
	if sh.bad {
		p = g.LossBad
	}
	if sh.bad {
		sh.bad = uState >= g.R
	} else {
		sh.bad = uState < g.P
	}
	return uLoss < p
}

// bucket passes a packet through the token bucket: when it leaves, or
// false when it would have to wait and the queue has no room for it.
func (sh *shaper) bucket(now time.Duration, size int) (time.Duration, bool) {
	for len(sh.waiting) > 0 && sh.waiting[0].leaves <= now {
		sh.backlog -= sh.waiting[0].size
		sh.waiting = sh.waiting[1:]
	}
	start := max(now, sh.ready)
	empty := max(sh.empty, start-sh.cost(sh.shape.Bucket))
	cost := sh.cost(size)
	leaves := max(start, empty+cost)
	if leaves > now {
		if sh.backlog+size > sh.shape.Queue {
			return 0, false
		}
		sh.waiting = append(sh.waiting, waiter{leaves, size})
		sh.backlog += size
	}
	sh.empty, sh.ready = empty+cost, leaves
	return leaves, true
}

// cost is how long the rate takes to carry n bytes, rounded up.
func (sh *shaper) cost(n int) time.Duration {
	bits := int64(n) * 8 * int64(time.Second)
	return time.Duration((bits + sh.shape.Rate - 1) / sh.shape.Rate)
}
