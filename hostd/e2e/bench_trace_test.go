package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"
)

// BenchmarkRelayTrace: where a relayed trivial command's time goes, from
// the shim's start to its exit, on loopback through the same userspace
// relay as BenchmarkRelayRoundTrip's rtt=0ms/client=process/impl=ours
// (with both daemons logging at debug level, which that one does not).
// hostd and gt-agent log each step (relay trace, forward trace); the
// benchmark adds the shim's start and exit as it sees them and reports
// each segment's median, in order:
//
//	shim-start-us    exec of the shim to the agent accepting its connection
//	stream-open-us   the agent opens a stream on the tunnel
//	request-read-us  the agent tells the shim it is attached and reads its request
//	to-hostd-us      the request crosses the tunnel to hostd's relay
//	admit-us         hostd reads and checks the request and takes a slot
//	spawn-us         hostd starts the command (environment, pipes, fork, exec)
//	command-us       the command runs, as hostd sees it (exec to exit)
//	exit-us          hostd drains the command's output
//	to-shim-us       the exit status crosses the tunnel and the agent delivers it
//	shim-exit-us     the shim takes the exit status, exits and is reaped
func BenchmarkRelayTrace(b *testing.B) {
	debug := []string{"--log-level", "debug", "--log-format", "json"}
	r := newRelayRig(b, rigOpts{serve: append(unbudgeted, debug...), agent: debug, viaRelay: true})
	var starts, ends []time.Time
	for b.Loop() {
		cmd := r.command("gt", "nudge", "exit", "0")
		starts = append(starts, time.Now())
		if err := runQuiet(cmd); err != nil {
			b.Fatal(err)
		}
		ends = append(ends, time.Now())
	}
	b.StopTimer()
	n := len(starts)
	agentSteps, hostdSteps := []string{"accepted", "opened", "read", "done"}, []string{"stream", "request", "started", "exited", "exit"}
	var steps map[string][]time.Time
	deadline := time.Now().Add(5 * time.Second)
	for {
		// The last lines may still be on their way through the pipes.
		steps = traceSteps(r.agent.Output(), "forward trace")
		maps.Copy(steps, traceSteps(r.hostd.Output(), "relay trace"))
		complete := true
		for _, s := range append(agentSteps, hostdSteps...) {
			complete = complete && len(steps[s]) == n
		}
		if complete {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d commands, but the trace has %v", n, counts(steps))
		}
		time.Sleep(50 * time.Millisecond)
	}
	steps["start"], steps["end"] = starts, ends
	for _, seg := range []struct{ name, from, to string }{
		{"shim-start", "start", "accepted"},
		{"stream-open", "accepted", "opened"},
		{"request-read", "opened", "read"},
		{"to-hostd", "read", "stream"},
		{"admit", "stream", "request"},
		{"spawn", "request", "started"},
		{"command", "started", "exited"},
		{"exit", "exited", "exit"},
		{"to-shim", "exit", "done"},
		{"shim-exit", "done", "end"},
		{"total", "start", "end"},
	} {
		ds := make([]float64, n)
		for i := range n {
			ds[i] = float64(steps[seg.to][i].Sub(steps[seg.from][i]).Nanoseconds()) / 1e3
		}
		b.ReportMetric(median(ds), seg.name+"-us")
	}
}

// traceSteps reads a process's JSON log and returns, per step, the times
// of its lines with message msg (of the relay's, for the agent's forward
// trace), in order. hostd's request line also says when its stream
// arrived: that is the step "stream".
func traceSteps(log, msg string) map[string][]time.Time {
	steps := map[string][]time.Time{}
	sc := bufio.NewScanner(strings.NewReader(log))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var line struct {
			Time     time.Time `json:"time"`
			Msg      string    `json:"msg"`
			Step     string    `json:"step"`
			Kind     string    `json:"kind"`
			StreamAt time.Time `json:"stream_at"`
		}
		if json.Unmarshal(sc.Bytes(), &line) != nil || line.Msg != msg || (line.Kind != "" && line.Kind != "relay") {
			continue
		}
		steps[line.Step] = append(steps[line.Step], line.Time)
		if !line.StreamAt.IsZero() {
			steps["stream"] = append(steps["stream"], line.StreamAt)
		}
	}
	return steps
}

// counts is how many times each step was traced, for a failure message.
func counts(steps map[string][]time.Time) string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(steps)) {
		out = append(out, fmt.Sprintf("%s %d", k, len(steps[k])))
	}
	return strings.Join(out, ", ")
}
