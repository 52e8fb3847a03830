package main

import (
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"
)

// rows are the table's lines: the relay's first, then the tunnel's, git's,
// scale's and the data channel's, each with the target its issue set (the
// floor, clone, scale and data targets are issue 25's).
var rows = []row{
	vs("relayed `gt status`, loopback: ours / Gas Town's per-call mTLS POST", relay(0, "ours"), relay(0, "percall"), "p50-us", micros, 0.6, true),
	{what: "relayed `gt status`, loopback: ours / the floor (a do-nothing Go program's start + the command run directly + one round trip)", figures: relayFloor, show: micros, limit: 1.25, below: true},
	vs("relayed `gt status`, 10 ms RTT: ours / per-call", relay(10, "ours"), relay(10, "percall"), "p50-us", micros, 0.5, true),
	{what: "relayed `gt status`: round trips a 10 ms link adds, in its measured round trip; ours (baseline: per-call)", figures: rttCost, show: rtts, limit: 1.1, below: true, onOurs: true},
	trace("the shim's start, to the agent accepting its connection", "shim-start-us"),
	trace("the agent opens a stream on the tunnel", "stream-open-us"),
	trace("the agent tells the shim it is attached, reads its request", "request-read-us"),
	trace("the request crosses the tunnel to hostd", "to-hostd-us"),
	trace("hostd reads and checks the request, takes a slot", "admit-us"),
	trace("hostd starts the command", "spawn-us"),
	trace("the command runs (exec to exit, as hostd sees it)", "command-us"),
	trace("hostd drains the command's output", "exit-us"),
	trace("the exit status crosses the tunnel, the agent delivers it", "to-shim-us"),
	trace("the shim exits and is reaped", "shim-exit-us"),
	trace("in all", "total-us"),
	metrics("`gt` shim start / a static Go program that does nothing (interleaved)", "ShimStart", "shim-us", "hello-us", micros, 1.3, true),
	metrics("`gt` shim start / `/bin/true`", "ShimStart", "shim-us", "true-us", micros, 0, true),
	metrics("gt-agent started as `gt` (what the shim replaced) / the static Go program", "ShimStart", "gtagent-us", "hello-us", micros, 0, true),
	vs("bulk, one stream, TCP fallback / bare TLS 1.3", "Bulk/transport=tcp/impl=ours", "Bulk/transport=tcp/impl=baseline", "MB/s", mbs, 0.9, false),
	vs("bulk, one stream, QUIC / bare quic-go", "Bulk/transport=quic/impl=ours", "Bulk/transport=quic/impl=baseline", "MB/s", mbs, 0.9, false),
	vs("stream open + 1-byte round trip, TCP / bare yamux", "StreamRTT/transport=tcp/impl=ours", "StreamRTT/transport=tcp/impl=baseline", "ns/op", nanos, 1.1, true),
	vs("stream open + 1-byte round trip, QUIC / bare quic-go", "StreamRTT/transport=quic/impl=ours", "StreamRTT/transport=quic/impl=baseline", "ns/op", nanos, 1.1, true),
	vs("connect from cold, QUIC / bare quic-go", "Connect/transport=quic/impl=ours", "Connect/transport=quic/impl=baseline", "ns/op", nanos, 0, true),
	vs("connect from cold, TCP / bare TLS", "Connect/transport=tcp/impl=ours", "Connect/transport=tcp/impl=baseline", "ns/op", nanos, 0, true),
	vs("git clone, QUIC / git http-backend", "Git/op=clone/impl=ours", "Git/op=clone/impl=httpbackend", "ns/op", nanos, 1.1, true),
	vs("git clone, TCP fallback / git http-backend", "Git/op=clone/impl=ourstcp", "Git/op=clone/impl=httpbackend", "ns/op", nanos, 1.1, true),
	vs("git push, QUIC / git http-backend", "Git/op=push*/impl=ours", "Git/op=push*/impl=httpbackend", "ns/op", nanos, 1.15, true),
	vs("git push, TCP fallback / git http-backend", "Git/op=push*/impl=ourstcp", "Git/op=push*/impl=httpbackend", "ns/op", nanos, 1.15, true),
	alone("git clone, QUIC: hostd's CPU per clone", "Git/op=clone/impl=ours", "hostd-cpu-ms", millis, 0),
	alone("git clone, QUIC: the agent's CPU per clone", "Git/op=clone/impl=ours", "agent-cpu-ms", millis, 0),
	alone("git clone, TCP: hostd's CPU per clone", "Git/op=clone/impl=ourstcp", "hostd-cpu-ms", millis, 0),
	alone("git clone, TCP: the agent's CPU per clone", "Git/op=clone/impl=ourstcp", "agent-cpu-ms", millis, 0),
	alone("hostd with 2,000 agents beating every 5 s: CPU (% of one core)", "HostdAgents/agents=2000", "cpu-%", percent, 10),
	{what: "hostd with 2,000 agents: memory per agent (RSS over hostd with none)", figures: rssPerAgent, show: kib, limit: 130, below: true},
	alone("hostd with 2,000 agents: `hostd status --json`", "HostdAgents/agents=2000", "ns/op", nanos, 100e6),
	alone("reconnect storm: 2,000 agents back after hostd is stopped and started", "ReconnectStorm/restart=term", "back-s", seconds, 15),
	alone("reconnect storm, stopped: most tunnels accepted in one second", "ReconnectStorm/restart=term", "peak-accepts/s", count, 0),
	alone("reconnect storm: 2,000 agents back after hostd is killed and started", "ReconnectStorm/restart=kill", "back-s", seconds, 15),
	alone("reconnect storm, killed: most tunnels accepted in one second", "ReconnectStorm/restart=kill", "peak-accepts/s", count, 0),
	vs("relayed stdout, 64 MiB: ours / a direct pipe", "RelayStdout/impl=ours", "RelayStdout/impl=direct", "MB/s", mbs, 0, false),
	vs("nudge typed and submitted / a local tmux send-keys", "Nudge/impl=ours", "Nudge/impl=local", "ns/op", nanos, 0, true),
	vs("a beat's process-tree sample / one `ps -e`", "TakeBeat/impl=ours", "TakeBeat/impl=ps", "ns/op", nanos, 0, true),
	vs("first data push, ~500 MB in 10,004 files: ours / rsync -a", "Sync/op=push/impl=ours", "Sync/op=push/impl=rsync", "ns/op", nanos, 1, true),
	vs("first data push over the TCP fallback: ours / rsync -a", "Sync/op=push/impl=ourstcp", "Sync/op=push/impl=rsync", "ns/op", nanos, 1, true),
	vs("first data push: ours / a tar, zstd, tar pipeline", "Sync/op=push/impl=ours", "Sync/op=push/impl=pipeline", "ns/op", nanos, 0, true),
	vs("data pull, 100 of 10,004 files changed: ours / rsync -a of the same change", "Sync/op=pull-100changed/impl=ours", "Sync/op=pull-100changed/impl=rsync", "ns/op", nanos, 1, true),
	alone("data pull, nothing changed", "Sync/op=pull-unchanged/impl=ours", "ns/op", nanos, 1e9),
	alone("`make bench`: the whole run", "MakeBench", "ns/op", nanos, 15*60e9),
}

// vs is a row of ours beside a baseline, two benchmarks in one unit; a
// zero limit is no target.
func vs(what, ours, base, unit string, show func(float64) string, limit float64, below bool) row {
	return pair(what, ours, unit, base, unit, show, limit, below)
}

// metrics is a row of two figures one benchmark reports, ours and its
// baseline measured side by side.
func metrics(what, name, ours, base string, show func(float64) string, limit float64, below bool) row {
	return pair(what, name, ours, name, base, show, limit, below)
}

// pair is a row of ours (a benchmark and unit) beside a baseline.
func pair(what, ours, oursUnit, base, baseUnit string, show func(float64) string, limit float64, below bool) row {
	return row{what: what, show: show, limit: limit, below: below, figures: func(m medians) (float64, float64, bool) {
		o, ok1 := m.match(ours, oursUnit)
		b, ok2 := m.match(base, baseUnit)
		return o, b, ok1 && ok2 && b != 0
	}}
}

// alone is a row of ours with no baseline and, unless zero, a target it
// must stay at or below.
func alone(what, ours, unit string, show func(float64) string, limit float64) row {
	return row{what: what, show: show, limit: limit, below: true, figures: func(m medians) (float64, float64, bool) {
		o, ok := m.match(ours, unit)
		return o, 0, ok
	}}
}

// trace is a row of the relayed command's trace (BenchmarkRelayTrace):
// one segment's median, loopback.
func trace(what, unit string) row {
	return alone("relayed `gt status` traced, loopback: "+what, "RelayTrace", unit, micros, 0)
}

// match is get for the benchmark whose name matches pattern (as
// path.Match: '*' within one level), e.g. the push row whose size varies;
// with several, the first by name.
func (m medians) match(pattern, unit string) (float64, bool) {
	for _, k := range slices.SortedFunc(maps.Keys(m), func(a, b result) int { return strings.Compare(a.name, b.name) }) {
		if ok, _ := path.Match(pattern, k.name); ok && k.unit == unit {
			return m.get(k.name, unit)
		}
	}
	return 0, false
}

// relay names a relayed trivial command's benchmark, a client process per
// command.
func relay(rttMs int, impl string) string {
	return fmt.Sprintf("RelayRoundTrip/rtt=%dms/client=process/impl=%s", rttMs, impl)
}

// rttCost is how many round trips the 10 ms link adds to a relayed
// command, ours and per-call's (client processes), counted in the link's
// own round trip as measured through the same relay (impl=link).
var rttCost = roundTrips(relayAt(10), relayAt(0))

// relayAt names BenchmarkRelayRoundTrip's sub-benchmark sub at a round
// trip of rttMs.
func relayAt(rttMs int) func(sub string) string {
	return func(sub string) string { return fmt.Sprintf("RelayRoundTrip/rtt=%dms/%s", rttMs, sub) }
}

// roundTrips is how many round trips a link adds to a relayed command,
// ours and per-call's (client processes), in the link's own round trip
// (client=inproc/impl=link): the difference between the benchmarks on
// the slow link and on the fast one, whose names slow and fast give.
func roundTrips(slow, fast func(sub string) string) func(medians) (float64, float64, bool) {
	return func(m medians) (float64, float64, bool) {
		var v [6]float64
		ok := true
		for i, sub := range []string{"client=process/impl=ours", "client=process/impl=percall", "client=inproc/impl=link"} {
			var found1, found2 bool
			v[2*i], found1 = m.get(slow(sub), "p50-us")
			v[2*i+1], found2 = m.get(fast(sub), "p50-us")
			ok = ok && found1 && found2
		}
		rtt := v[4] - v[5]
		return (v[0] - v[1]) / rtt, (v[2] - v[3]) / rtt, ok && rtt > 0
	}
}

// relayFloor is a relayed trivial command (a client process, loopback)
// beside its floor: a do-nothing Go program's start, the command run
// directly, and one round trip of the link.
func relayFloor(m medians) (float64, float64, bool) {
	var v [4]float64
	ok := true
	for i, name := range []string{relay(0, "ours"), relay(0, "hello"), relay(0, "direct"), "RelayRoundTrip/rtt=0ms/client=inproc/impl=link"} {
		var found bool
		v[i], found = m.get(name, "p50-us")
		ok = ok && found
	}
	return v[0], v[1] + v[2] + v[3], ok
}

// rssPerAgent is hostd's RSS with 2,000 agents less its RSS with none,
// per agent, in KiB.
func rssPerAgent(m medians) (float64, float64, bool) {
	full, ok1 := m.get("HostdAgents/agents=2000", "rss-KiB")
	none, ok2 := m.get("HostdAgents/agents=0", "rss-KiB")
	return (full - none) / 2000, 0, ok1 && ok2
}

func nanos(ns float64) string {
	switch {
	case ns >= 1e9:
		return fmt.Sprintf("%.2f s", ns/1e9)
	case ns >= 1e6:
		return fmt.Sprintf("%.2f ms", ns/1e6)
	default:
		return fmt.Sprintf("%.1f µs", ns/1e3)
	}
}

func micros(us float64) string { return nanos(us * 1e3) }
func millis(ms float64) string { return nanos(ms * 1e6) }
func seconds(s float64) string { return nanos(s * 1e9) }
func mbs(v float64) string {
	if v < 10 {
		return fmt.Sprintf("%.2f MB/s", v)
	}
	return fmt.Sprintf("%.0f MB/s", v)
}
func percent(v float64) string { return fmt.Sprintf("%.1f%%", v) }
func kib(v float64) string     { return fmt.Sprintf("%.0f KiB", v) }
func count(v float64) string   { return fmt.Sprintf("%.0f", v) }
func rtts(v float64) string    { return fmt.Sprintf("%.2f RTT", v) }
