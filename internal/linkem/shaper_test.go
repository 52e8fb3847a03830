package linkem

import (
	"math"
	"testing"
	"time"
)

const ms = time.Millisecond

// offer is a packet offered to a shaper: when, and how big.
type offer struct {
	at   time.Duration
	size int
}

// outcome is what the shaper decided for it.
type outcome struct {
	fate fate
	at   time.Duration // when delivered
}

// burst gives n packets of size bytes, all offered at at.
func burst(at time.Duration, n, size int) []offer {
	offers := make([]offer, n)
	for i := range offers {
		offers[i] = offer{at, size}
	}
	return offers
}

// TestShaperTimelines feeds synthetic timelines to the scheduling core and
// checks each packet's fate and time. At 8 Mbit/s a byte takes 1 µs, so a
// 1000-byte packet 1 ms; the MTU is 1000, so the bucket holds one packet
// unless a row says otherwise.
func TestShaperTimelines(t *testing.T) {
	const rate = 8_000_000
	ok := func(at time.Duration) outcome { return outcome{delivered, at} }
	tests := []struct {
		name   string
		shape  Shape
		offers []offer
		want   []outcome
	}{
		{"delay alone, in order", Shape{Delay: 25 * ms},
			[]offer{{0, 100}, {1 * ms, 1500}, {1 * ms, 40}},
			[]outcome{ok(25 * ms), ok(26 * ms), ok(26 * ms)}},
		{"rate: a packet a millisecond, then the delay", Shape{Rate: rate, Delay: 10 * ms},
			burst(0, 3, 1000),
			[]outcome{ok(10 * ms), ok(11 * ms), ok(12 * ms)}},
		{"rate: smaller packets cost less", Shape{Rate: rate},
			[]offer{{0, 1000}, {0, 250}, {0, 500}},
			[]outcome{ok(0), ok(250 * time.Microsecond), ok(750 * time.Microsecond)}},
		{"bucket: three packets at once, the fourth a millisecond later", Shape{Rate: rate, Bucket: 3000},
			burst(0, 4, 1000),
			[]outcome{ok(0), ok(0), ok(0), ok(1 * ms)}},
		{"bucket refills while idle, up to its depth", Shape{Rate: rate, Bucket: 2000},
			append(burst(0, 3, 1000), burst(50*ms, 3, 1000)...),
			[]outcome{ok(0), ok(0), ok(1 * ms), ok(50 * ms), ok(50 * ms), ok(51 * ms)}},
		{"bucket refills partly", Shape{Rate: rate},
			[]offer{{0, 1000}, {0, 1000}, {2*ms + 500*time.Microsecond, 1000}},
			[]outcome{ok(0), ok(1 * ms), ok(2*ms + 500*time.Microsecond)}},
		{"queue full: tail drop, then room again as packets leave", Shape{Rate: rate, Queue: 2000},
			append(burst(0, 5, 1000), offer{1 * ms, 1000}, offer{1 * ms, 1000}),
			[]outcome{ok(0), ok(1 * ms), ok(2 * ms), {fate: overflow}, {fate: overflow}, ok(3 * ms), {fate: overflow}}},
		{"a packet that need not wait passes a queue smaller than itself", Shape{Rate: rate, Queue: 500},
			[]offer{{0, 1000}, {0, 1000}, {5 * ms, 1000}},
			[]outcome{ok(0), {fate: overflow}, ok(5 * ms)}},
		{"loss 1: everything lost", Shape{Loss: 1, Rate: rate},
			burst(0, 3, 1000),
			[]outcome{{fate: lost}, {fate: lost}, {fate: lost}}},
		{"reorder 1: every packet skips the delay", Shape{Reorder: 1, Delay: 30 * ms, Rate: rate},
			burst(0, 2, 1000),
			[]outcome{ok(0), ok(1 * ms)}},
		{"bursts that never start lose nothing", Shape{Bursts: &GilbertElliott{P: 0, R: 1, LossBad: 1}},
			burst(0, 3, 100),
			[]outcome{ok(0), ok(0), ok(0)}},
		{"bursts that start at once lose from the second packet", Shape{Bursts: &GilbertElliott{P: 1, R: 0, LossBad: 1}},
			burst(0, 3, 100),
			[]outcome{ok(0), {fate: lost}, {fate: lost}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sh := newShaper(tt.shape, 1000, 1, 1)
			for i, o := range tt.offers {
				at, f := sh.admit(o.at, o.size)
				got := outcome{f, at}
				if f != delivered {
					got.at = 0
				}
				if got != tt.want[i] {
					t.Errorf("packet %d (%d bytes at %v): got %+v, want %+v", i, o.size, o.at, got, tt.want[i])
				}
			}
		})
	}
}

// TestShaperSeeded: the random decisions are the seed's alone, not the
// timeline's, and they have the configured statistics.
func TestShaperSeeded(t *testing.T) {
	const n = 200_000
	shape := Shape{Delay: 25 * ms, Jitter: 5 * ms, Loss: 0.01, Reorder: 0.001}
	fates := func(seed uint64, spacing time.Duration, size int) ([]fate, []time.Duration) {
		sh := newShaper(shape, 1500, seed, 1)
		fs, delays := make([]fate, n), make([]time.Duration, n)
		for i := range n {
			now := time.Duration(i) * spacing
			at, f := sh.admit(now, size)
			fs[i], delays[i] = f, at-now
		}
		return fs, delays
	}
	a, delays := fates(7, ms, 100)
	b, _ := fates(7, 3*time.Microsecond, 1400)
	c, _ := fates(8, ms, 100)
	same, differs, nlost, nreordered := true, false, 0, 0
	var sum time.Duration
	for i := range n {
		same = same && a[i] == b[i]
		differs = differs || a[i] != c[i]
		switch {
		case a[i] == lost:
			nlost++
		case delays[i] == 0:
			nreordered++
		case delays[i] < 20*ms || delays[i] > 30*ms:
			t.Fatalf("packet %d delayed %v, outside 25±5 ms", i, delays[i])
		default:
			sum += delays[i]
		}
	}
	if !same {
		t.Error("the same seed gave different fates on another timeline")
	}
	if !differs {
		t.Error("another seed gave the same fates")
	}
	within(t, "lost", nlost, n, 0.01)
	within(t, "reordered", nreordered, n-nlost, 0.001)
	if mean := sum / time.Duration(n-nlost-nreordered); mean < 24900*time.Microsecond || mean > 25100*time.Microsecond {
		t.Errorf("mean delay %v, want 25 ms ± 0.1", mean)
	}
}

// TestShaperBursts: Gilbert-Elliott loses in bursts of 1/R packets on
// average, at the long-run rate its doc gives.
func TestShaperBursts(t *testing.T) {
	const n = 200_000
	g := &GilbertElliott{P: 0.002, R: 0.25, LossGood: 0.001, LossBad: 0.5}
	sh := newShaper(Shape{Bursts: g}, 1500, 3, 1)
	nlost, runs, prev := 0, 0, false
	for range n {
		_, f := sh.admit(0, 100)
		if f == lost {
			nlost++
			if !prev {
				runs++
			}
		}
		prev = f == lost
	}
	// Bursty losses vary more than a binomial's: a quarter either way is
	// about four standard deviations here.
	want := n * (g.R*g.LossGood + g.P*g.LossBad) / (g.P + g.R)
	if math.Abs(float64(nlost)-want) > want/4 {
		t.Errorf("lost %d of %d, want %.0f ± 25%%", nlost, n, want)
	}
	if mean := float64(nlost) / float64(runs); mean < 1.2 {
		t.Errorf("losses come in runs of %.2f on average: no bursts", mean)
	}
}

// within fails t unless k of n is within five standard deviations of the
// binomial's mean n·p.
func within(t *testing.T, what string, k, n int, p float64) {
	t.Helper()
	mean, sd := float64(n)*p, math.Sqrt(float64(n)*p*(1-p))
	if math.Abs(float64(k)-mean) > 5*sd {
		t.Errorf("%s %d of %d, want %.0f ± %.0f", what, k, n, mean, 5*sd)
	}
	t.Logf("%s %d of %d (expected %.0f ± %.0f)", what, k, n, mean, 5*sd)
}
