package linkem

import (
	"fmt"
	"net/netip"
	"time"
)

// Shape is what one direction of the link does to the packets crossing
// it, in netem's and tbf's order: random loss as a packet enters, then
// the rate limiter's queue (tail drop when full), then the delay.
type Shape struct {
	// Delay is added to every packet once it leaves the rate limiter.
	Delay time.Duration
	// Jitter spreads each packet's delay uniformly over Delay±Jitter
	// (never below zero). Packets leave in the order of their times, so
	// jitter reorders them, as netem's does.
	Jitter time.Duration
	// Loss is the probability that a packet is dropped, each packet
	// independently of the others.
	Loss float64
	// Bursts, when set, drops packets in bursts instead of by Loss.
	Bursts *GilbertElliott
	// Reorder is the probability that a packet skips Delay and Jitter
	// (netem's reorder) and so overtakes those sent before it.
	Reorder float64
	// Rate is the link's rate in bits per second, each IP packet counted
	// whole; 0 for no limit.
	Rate int64
	// Queue is how many bytes may wait for the rate limiter; a packet
	// that would make it more is dropped. 0: 100 ms of Rate, at least
	// 64 KiB. Without a Rate nothing waits.
	Queue int
	// Bucket is the token bucket's depth in bytes, what may leave at once
	// after an idle spell; 0, or less than the MTU: the MTU.
	Bucket int
}

// GilbertElliott is a two-state loss model: a packet is lost with the
// probability of the state the link is in (LossGood or LossBad), then the
// link moves from good to bad with probability P and back with R. Bursts
// last 1/R packets on average; the long-run loss is
// (R·LossGood + P·LossBad) / (P + R).
type GilbertElliott struct {
	P, R              float64
	LossGood, LossBad float64
}

// Config describes a link: two namespaces A and B, their addresses and
// what the link does each way.
type Config struct {
	// Shape shapes both directions, unless Back is set.
	Shape Shape
	// Back, when set, shapes the packets from B to A instead of Shape.
	Back *Shape
	// Seed fixes every random decision: with the same seed, the n-th
	// packet of each direction meets the same loss, jitter and reorder
	// whatever the timing (the rate limiter's drops depend on timing).
	Seed uint64
	// A and B are the two ends' IPv4 addresses; 10.199.0.1 and
	// 10.199.0.2 when unset (each namespace is private, so every link may
	// use the same).
	A, B netip.Addr
	// MTU is both devices' MTU; 1500 when 0.
	MTU int
	// TCP is both namespaces' TCP congestion control
	// (net.ipv4.tcp_congestion_control), one the kernel has (HasTCP);
	// empty: the host's default. One the host's
	// tcp_allowed_congestion_control lacks is added there while the link
	// lives: outside the host's namespace the kernel refuses the rest.
	TCP string
}

// Stats counts what one direction of the link did. Packets in flight are
// Packets less Lost, Overflow and Delivered.
type Stats struct {
	// Packets is how many packets entered the link.
	Packets int64
	// Lost is how many the random loss dropped (Loss or Bursts).
	Lost int64
	// Overflow is how many found the rate limiter's queue full.
	Overflow int64
	// Delivered is how many reached the other end, and Bytes their bytes.
	Delivered, Bytes int64
}

// InFlight is how many packets have entered the link and neither been
// dropped nor delivered yet.
func (s Stats) InFlight() int64 { return s.Packets - s.Lost - s.Overflow - s.Delivered }

// withDefaults fills what c leaves zero and checks the rest.
func (c Config) withDefaults() (Config, error) {
	if !c.A.IsValid() {
		c.A = netip.AddrFrom4([4]byte{10, 199, 0, 1})
	}
	if !c.B.IsValid() {
		c.B = netip.AddrFrom4([4]byte{10, 199, 0, 2})
	}
	if !c.A.Is4() || !c.B.Is4() || c.A == c.B {
		return c, fmt.Errorf("linkem: addresses %v and %v: give two different IPv4 addresses", c.A, c.B)
	}
	if c.MTU == 0 {
		c.MTU = 1500
	}
	if c.MTU < 576 || c.MTU > 65535 {
		return c, fmt.Errorf("linkem: MTU %d: give one from 576 to 65535", c.MTU)
	}
	if c.Back == nil {
		c.Back = &c.Shape
	}
	for _, s := range []*Shape{&c.Shape, c.Back} {
		if err := s.check(); err != nil {
			return c, err
		}
	}
	return c, nil
}

// check says what is wrong with s, if anything.
func (s Shape) check() error {
	probs := []float64{s.Loss, s.Reorder}
	if g := s.Bursts; g != nil {
		probs = append(probs, g.P, g.R, g.LossGood, g.LossBad)
	}
	for _, p := range probs {
		if !(p >= 0 && p <= 1) {
			return fmt.Errorf("linkem: probability %v: give one from 0 to 1", p)
		}
	}
	if s.Delay < 0 || s.Jitter < 0 || s.Rate < 0 || s.Queue < 0 || s.Bucket < 0 {
		return fmt.Errorf("linkem: %+v: delay, jitter, rate, queue and bucket cannot be negative", s)
	}
	return nil
}

// sized gives s with its queue and bucket sizes filled for a link of
// that MTU.
func (s Shape) sized(mtu int) Shape {
	if s.Queue == 0 {
		s.Queue = max(int(s.Rate/8/10), 64<<10)
	}
	s.Bucket = max(s.Bucket, mtu)
	return s
}
