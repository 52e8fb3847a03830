package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/polecat-sidecar/sidecar/hostd/api"
	"github.com/polecat-sidecar/sidecar/internal/linkem"
)

// BenchmarkWANLiveness: SIDECAR_BENCH_WAN_AGENTS agents (10), each a real
// gt-agent supervising a tmux session with the default beat interval and
// idle timeout, across a 50 ms link losing 3% of the packets each way.
// Over a window of SIDECAR_BENCH_WAN_WINDOW seconds (60) it counts the
// polecats hostd judged stale, disconnected or dead (false-judgements:
// the loss alone did it); then it cuts the link (every packet dropped as
// it arrives, at both ends) and reports the longest time from the cut to
// a polecat shown disconnected (disconnect-s), and, the link back, to
// every polecat working again (back-s).
func BenchmarkWANLiveness(b *testing.B) {
	if _, err := exec.LookPath("iptables"); err != nil {
		b.Skip("the cut needs iptables")
	}
	n, window := envInt("SIDECAR_BENCH_WAN_AGENTS", 10), time.Duration(envInt("SIDECAR_BENCH_WAN_WINDOW", 60))*time.Second
	l := wanLink(b, wanDelay, 3, 0)
	e := ends{l}
	tw := NewTown(b)
	tw.Netns = e.netns()
	addr := e.hostAddr(b)
	tw.ServeOn(addr, "--log-level", "warn")
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("p%02d", i)
		StartIn(b, tw.Netns.Agent, AgentEnv(addr, tw.Issue("gastown/"+names[i], time.Hour)), "gt-agent", "up",
			"--tmux-socket", TmuxSocket(b), "--", "sleep", "3600")
	}
	all := func(state string) func(api.Status) bool {
		return func(st api.Status) bool {
			return len(api.InStates(st.Polecats, []string{state})) == n
		}
	}
	tw.WaitStatus(60*time.Second, all("working"))
	var falses, disconnect, back float64
	for b.Loop() {
		start := time.Now()
		time.Sleep(window) // the window the loss alone has to make a polecat look gone
		for _, ev := range tw.events(b, names, start, "stale", "disconnected", "dead") {
			b.Logf("judged %s at +%.1fs by the loss alone: %s", ev.To, ev.Time.Sub(start).Seconds(), ev.Reason)
			falses++
		}

		cut := time.Now()
		unCut := cutLink(b, l)
		tw.WaitStatus(30*time.Second, all("disconnected"))
		evs := tw.events(b, names, cut, "disconnected")
		if len(evs) < n {
			b.Fatalf("%d of %d polecats have a disconnection since the cut: the rest were not seen to go", len(evs), n)
		}
		for _, ev := range evs {
			disconnect = max(disconnect, ev.Time.Sub(cut).Seconds())
		}
		unCut()
		restored := time.Now()
		tw.WaitStatus(60*time.Second, all("working"))
		back = max(back, time.Since(restored).Seconds())
	}
	b.ReportMetric(falses/float64(b.N), "false-judgements")
	b.ReportMetric(disconnect, "disconnect-s")
	b.ReportMetric(back, "back-s")
}

// events are the polecats' changes of state to one of states since t, as
// hostd recorded them.
func (tw *Town) events(b *testing.B, names []string, t time.Time, states ...string) []api.Event {
	var out []api.Event
	for _, name := range names {
		d, err := tw.Client().Polecat(context.Background(), api.Identity{Rig: "gastown", Name: name})
		if err != nil {
			b.Fatal(err)
		}
		for _, ev := range d.Events {
			if ev.Time.After(t) && slices.Contains(states, ev.To) {
				out = append(out, ev)
			}
		}
	}
	return out
}

// cutLink drops every packet that crosses the link where it arrives, at
// both ends (iptables), until the function it gives is called.
func cutLink(b *testing.B, l *linkem.Link) (restore func()) {
	rule := func(ns *linkem.Namespace, op string) {
		if out, err := ns.Command(context.Background(), "iptables", "-w", op, "INPUT", "-i", ns.Dev, "-j", "DROP").CombinedOutput(); err != nil {
			b.Fatalf("iptables %s in %s: %v %s", op, ns.Name, err, out)
		}
	}
	for _, ns := range []*linkem.Namespace{l.A, l.B} {
		rule(ns, "-I")
	}
	return func() {
		for _, ns := range []*linkem.Namespace{l.A, l.B} {
			rule(ns, "-D")
		}
	}
}
