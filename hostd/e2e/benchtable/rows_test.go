package main

import (
	"math"
	"strings"
	"testing"
)

// TestDerivedRows: the rows computed from several benchmarks, and the
// push row found whatever its size.
func TestDerivedRows(t *testing.T) {
	m := medians{}
	err := m.read(strings.NewReader(`
BenchmarkRelayRoundTrip/rtt=0ms/client=process/impl=ours-2     100  1 ns/op  5000 p50-us  9000 p99-us
BenchmarkRelayRoundTrip/rtt=0ms/client=process/impl=hello-2    100  1 ns/op  1300 p50-us  2000 p99-us
BenchmarkRelayRoundTrip/rtt=0ms/client=process/impl=direct-2   100  1 ns/op   900 p50-us  1000 p99-us
BenchmarkRelayRoundTrip/rtt=10ms/client=process/impl=ours-2    100  1 ns/op 17000 p50-us 19000 p99-us
BenchmarkRelayRoundTrip/rtt=0ms/client=process/impl=percall-2  100  1 ns/op 11000 p50-us 19000 p99-us
BenchmarkRelayRoundTrip/rtt=10ms/client=process/impl=percall-2 100  1 ns/op 44000 p50-us 49000 p99-us
BenchmarkRelayRoundTrip/rtt=0ms/client=inproc/impl=link-2       100  1 ns/op    50 p50-us    10 p99-us
BenchmarkRelayRoundTrip/rtt=10ms/client=inproc/impl=link-2      100  1 ns/op 11000 p50-us 12000 p99-us
BenchmarkHostdAgents/agents=0-2    20  140000 ns/op  0 cpu-%  13000 rss-KiB
BenchmarkHostdAgents/agents=2000-2 20 3400000 ns/op  9 cpu-% 283000 rss-KiB
BenchmarkGit/op=push10MB/impl=ours-2        1 2200000000 ns/op
BenchmarkGit/op=push10MB/impl=httpbackend-2 1 2000000000 ns/op
`))
	if err != nil {
		t.Fatal(err)
	}
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
	if ours, base, ok := rttCost(m); !ok || !near(ours, 12.0/10.95) || !near(base, 33.0/10.95) {
		t.Errorf("rttCost: %v %v %v, want 12 and 33 ms in the link's 10.95 ms round trips", ours, base, ok)
	}
	if ours, floor, ok := relayFloor(m); !ok || ours != 5000 || floor != 1300+900+50 {
		t.Errorf("relayFloor: %v %v %v, want 5000 beside 1300+900+50 µs", ours, floor, ok)
	}
	if ours, _, ok := rssPerAgent(m); !ok || ours != 135 {
		t.Errorf("rssPerAgent: %v %v, want 135 KiB", ours, ok)
	}
	if v, ok := m.match("Git/op=push*/impl=ours", "ns/op"); !ok || v != 2.2e9 {
		t.Errorf("push row: %v %v", v, ok)
	}
	if _, ok := m.match("Git/op=push*/impl=ourstcp", "ns/op"); ok {
		t.Error("matched a benchmark that did not run")
	}
}
