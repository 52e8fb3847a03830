package main

import (
	"strings"
	"testing"
)

// TestWANRows: the WAN rows' round trips count from the link with no
// delay, the bulk row on cubic holds the 1.5x target at 1% loss
// alone, QUIC's figure stands beside TCP on bbr too, a false judgement
// misses its target of none, and rows whose benchmarks did not run are
// left out.
func TestWANRows(t *testing.T) {
	m := medians{}
	err := m.read(strings.NewReader(`
BenchmarkWANRelay/rtt=0ms/loss=0pct/client=process/impl=ours-2      60 1 ns/op   6000 p50-us 9 p99-us
BenchmarkWANRelay/rtt=0ms/loss=0pct/client=process/impl=percall-2   60 1 ns/op  10000 p50-us 9 p99-us
BenchmarkWANRelay/rtt=0ms/loss=0pct/client=inproc/impl=link-2       60 1 ns/op    100 p50-us 9 p99-us
BenchmarkWANRelay/rtt=50ms/loss=1pct/client=process/impl=ours-2     60  62000000 ns/op  56600 p50-us 9 p99-us
BenchmarkWANRelay/rtt=50ms/loss=1pct/client=process/impl=percall-2  60 210000000 ns/op 162000 p50-us 9 p99-us
BenchmarkWANRelay/rtt=50ms/loss=1pct/client=inproc/impl=link-2      60 1 ns/op  50700 p50-us 9 p99-us
BenchmarkWANBulk/loss=1pct/tcp=cubic/transport=quic/impl=ours-2      1 1 ns/op 0.60 MB/s
BenchmarkWANBulk/loss=1pct/tcp=cubic/transport=tcp/impl=baseline-2   1 1 ns/op 0.30 MB/s
BenchmarkWANBulk/loss=1pct/tcp=bbr/transport=tcp/impl=baseline-2     1 1 ns/op 2.40 MB/s
BenchmarkWANBulk/loss=3pct/tcp=cubic/transport=quic/impl=ours-2      1 1 ns/op 0.20 MB/s
BenchmarkWANBulk/loss=3pct/tcp=cubic/transport=tcp/impl=baseline-2   1 1 ns/op 0.40 MB/s
BenchmarkWANLiveness-2 1 1 ns/op 4.9 back-s 10.0 disconnect-s 1 false-judgements
`))
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	render(&out, wanRows, m, false)
	want := []string{
		"| WAN, 50 ms RTT, 1% loss: relayed `gt status` / Gas Town's per-call mTLS POST | 56.60 ms | 162.00 ms | 0.35 | ≤ 0.50 | met |",
		"| WAN, 50 ms RTT, 1% loss: relayed `gt status`, the mean (each loss's retransmissions in it) / per-call | 62.00 ms | 210.00 ms | 0.30 |  |  |",
		"| WAN, 50 ms RTT, 1% loss: round trips the link adds to a relayed `gt status`, in its measured round trip; ours (baseline: per-call) | 1.00 RTT | 3.00 RTT | 0.33 | ≤ 1.10 RTT | met |",
		"| WAN, 50 ms RTT, 1% loss, 20 Mbit/s: bulk, 8 MiB on one stream, QUIC / bare TLS over TCP, TCP on cubic | 0.60 MB/s | 0.30 MB/s | 2.00 | ≥ 1.50 | met |",
		"| WAN, 50 ms RTT, 3% loss, 20 Mbit/s: bulk, 8 MiB on one stream, QUIC / bare TLS over TCP, TCP on cubic | 0.20 MB/s | 0.40 MB/s | 0.50 |  |  |",
		"| WAN, 50 ms RTT, 1% loss, 20 Mbit/s: bulk, 8 MiB on one stream, QUIC / bare TLS over TCP, TCP on bbr | 0.60 MB/s | 2.40 MB/s | 0.25 |  |  |",
		"| WAN, 50 ms RTT, 3% loss: polecats judged stale or disconnected by the loss alone, 10 agents over a minute | 1 |  |  | ≤ 0 | missed |",
		"| WAN, 50 ms RTT, 3% loss: the link cut, the last of 10 polecats shown disconnected (the 10 s idle timeout and an eighth) | 10.00 s |  |  | ≤ 11.25 s | met |",
		"| WAN, 50 ms RTT, 3% loss: the link back, every polecat working again | 4.90 s |  |  |  |  |",
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")[2:]
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("rows:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
}
