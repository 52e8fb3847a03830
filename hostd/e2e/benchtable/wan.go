package main

import "fmt"

// wanRows are the rows of make bench-wan (issue 40): each benchmark across
// an emulated link of 50 ms round trip at each loss rate (20 Mbit/s for
// bulk, git and data), ours beside what an operator would use on the same
// link, with the targets.
var wanRows = wan([]int{0, 1, 3})

// wan gives the WAN rows for the loss rates, row by row.
func wan(losses []int) []row {
	var rs []row
	each := func(f func(loss int, link, at string) row) {
		for _, loss := range losses {
			rs = append(rs, f(loss, fmt.Sprintf("WAN, 50 ms RTT, %d%% loss", loss), fmt.Sprintf("loss=%dpct", loss)))
		}
	}
	relay := func(at string) func(string) string {
		return func(sub string) string { return "WANRelay/rtt=50ms/" + at + "/" + sub }
	}
	// the same relay across the emulator with no delay and no loss
	local := func(sub string) string { return "WANRelay/rtt=0ms/loss=0pct/" + sub }
	each(func(_ int, link, at string) row {
		return vs(link+": relayed `gt status` / Gas Town's per-call mTLS POST", relay(at)("client=process/impl=ours"),
			relay(at)("client=process/impl=percall"), "p50-us", micros, 0.5, true)
	})
	each(func(_ int, link, at string) row {
		return vs(link+": relayed `gt status`, the mean (each loss's retransmissions in it) / per-call", relay(at)("client=process/impl=ours"),
			relay(at)("client=process/impl=percall"), "ns/op", nanos, 0, true)
	})
	each(func(_ int, link, at string) row {
		return row{what: link + ": round trips the link adds to a relayed `gt status`, in its measured round trip; ours (baseline: per-call)",
			figures: roundTrips(relay(at), local), show: rtts, limit: 1.1, below: true, onOurs: true}
	})
	// Bulk: TCP on cubic, then on bbr (QUIC's own controller ran once,
	// in cubic's run).
	for _, r := range []struct {
		what, ours, base string
		at1pct           float64 // the target at 1% loss
	}{
		{"QUIC / bare TLS over TCP, TCP on cubic", "tcp=cubic/transport=quic/impl=ours", "tcp=cubic/transport=tcp/impl=baseline",
			1.5}, // the issue's: QUIC at 1% loss at least 1.5x TCP
		{"TCP fallback / bare TLS over TCP, both on cubic", "tcp=cubic/transport=tcp/impl=ours", "tcp=cubic/transport=tcp/impl=baseline", 0},
		{"QUIC / bare TLS over TCP, TCP on bbr", "tcp=cubic/transport=quic/impl=ours", "tcp=bbr/transport=tcp/impl=baseline", 0},
		{"TCP fallback / bare TLS over TCP, both on bbr", "tcp=bbr/transport=tcp/impl=ours", "tcp=bbr/transport=tcp/impl=baseline", 0},
	} {
		each(func(loss int, link, at string) row {
			limit := 0.0
			if loss == 1 {
				limit = r.at1pct
			}
			return vs(link+", 20 Mbit/s: bulk, 8 MiB on one stream, "+r.what, "WANBulk/"+at+"/"+r.ours,
				"WANBulk/"+at+"/"+r.base, "MB/s", mbs, limit, false)
		})
	}
	for _, op := range []struct{ what, op string }{{"git clone (10 MB)", "clone"}, {"git push (5 MB)", "push*"}} {
		for _, impl := range []struct{ what, impl string }{{"QUIC", "ours"}, {"TCP fallback", "ourstcp"}} {
			each(func(_ int, link, at string) row {
				return vs(fmt.Sprintf("%s, 20 Mbit/s: %s, %s / git http-backend behind TLS", link, op.what, impl.what),
					"WANGit/"+at+"/op="+op.op+"/impl="+impl.impl, "WANGit/"+at+"/op="+op.op+"/impl=https", "ns/op", nanos, 1, true)
			})
		}
	}
	for _, d := range []struct{ what, ours, base string }{
		{"first data push (10.5 MB, 1,001 files), ours / rsync -a over ssh", "op=push/impl=ours", "op=push/impl=rsync"},
		{"first data push, TCP fallback / rsync -a over ssh", "op=push/impl=ourstcp", "op=push/impl=rsync"},
		{"data pull, 100 of 1,001 files changed, ours / rsync -a over ssh", "op=pull-100changed/impl=ours", "op=pull-100changed/impl=rsync"},
	} {
		each(func(_ int, link, at string) row {
			return vs(link+", 20 Mbit/s: "+d.what, "WANSync/"+at+"/"+d.ours, "WANSync/"+at+"/"+d.base, "ns/op", nanos, 1, true)
		})
	}
	// A count must be 0: at most 0.5, shown as 0.
	rs = append(rs, alone("WAN, 50 ms RTT, 3% loss: polecats judged stale or disconnected by the loss alone, 10 agents over a minute", "WANLiveness", "false-judgements", count, 0.5),
		alone("WAN, 50 ms RTT, 3% loss: the link cut, the last of 10 polecats shown disconnected (the 10 s idle timeout and an eighth)", "WANLiveness", "disconnect-s", seconds, 11.25),
		alone("WAN, 50 ms RTT, 3% loss: the link back, every polecat working again", "WANLiveness", "back-s", seconds, 0),
		alone("`make bench-wan`: its whole run", "MakeBenchWAN", "ns/op", nanos, 0))
	return rs
}
