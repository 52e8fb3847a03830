package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// RelayClientEnv names a gt client to use in place of bin/gt: the
// relay tests' and benchmarks' shim (relayRig.command) and
// BenchmarkPrototypeRelayClient's second client. docs/prototypes/relay-client
// is one, in C.
const RelayClientEnv = "SIDECAR_RELAY_CLIENT"

// BenchmarkPrototypeRelayClient: BenchmarkRelayRoundTrip's loopback relayed
// command and its floor, one of each per iteration in turn: bin/gt, the
// client in $SIDECAR_RELAY_CLIENT and its start alone (no agent; both
// skipped when unset), this process's frames, a do-nothing Go program,
// /bin/true, the command direct, one round trip. Each one's p50 is
// <row>-us; the CPU each process spends a command (wait4, /proc; µs) is
// <row>-<process>-cpu-us.
func BenchmarkPrototypeRelayClient(b *testing.B) {
	rb := newRelayBench(b, ends{})
	hello := buildHello(b)
	type row struct {
		name                                string
		cmd                                 func() *exec.Cmd // a process; nil: op
		op                                  func() error
		exit                                int // the exit status it should end with
		took, client, hostd, agent, command []float64
	}
	rows := []*row{
		{name: "goshim", cmd: func() *exec.Cmd { // bin/gt even when RelayClientEnv swaps the rig's
			c := exec.Command(filepath.Join(BinDir, "gt"), rb.args[1:]...)
			c.Env = append(os.Environ(), "GT_AGENT_SOCKET="+rb.r.socket)
			return c
		}},
		{name: "inproc", op: func() error { return relayInProc(rb.r.socket, rb.req) }},
		{name: "hello", cmd: func() *exec.Cmd { return exec.Command(hello) }},
		{name: "true", cmd: func() *exec.Cmd { return exec.Command("/bin/true") }},
		{name: "direct", cmd: func() *exec.Cmd { return exec.Command(rb.fake, rb.args[1:]...) }},
		{name: "link", op: rb.probe.roundTrip},
	}
	if c := os.Getenv(RelayClientEnv); c != "" {
		rows = append(rows, &row{name: "cshim", cmd: func() *exec.Cmd { return rb.r.command("gt", rb.args[1:]...) }},
			&row{name: "cstart", exit: 255, cmd: func() *exec.Cmd { // its start alone: no agent there, exit 255
				cmd := exec.Command(c, rb.args[1:]...)
				cmd.Env = append(os.Environ(), "GT_AGENT_SOCKET="+rb.r.socket+".none")
				return cmd
			}})
	}
	for n := 0; b.Loop(); n++ {
		for k := range rows {
			r := rows[(n+k)%len(rows)]
			h0, a0 := procCPU(b, rb.r.hostd.Cmd.Process.Pid), procCPU(b, rb.r.agent.Cmd.Process.Pid)
			t0 := time.Now()
			var err error
			var cmd *exec.Cmd
			if r.cmd != nil {
				cmd = r.cmd()
				if err = runQuiet(cmd); r.exit != 0 && cmd.ProcessState.ExitCode() == r.exit {
					err = nil
				}
			} else {
				err = r.op()
			}
			r.took = append(r.took, float64(time.Since(t0).Microseconds()))
			if err != nil {
				b.Fatalf("%s: %v", r.name, err)
			}
			h1, a1 := procCPU(b, rb.r.hostd.Cmd.Process.Pid), procCPU(b, rb.r.agent.Cmd.Process.Pid)
			if cmd != nil {
				u := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
				r.client = append(r.client, float64(u.Microseconds()))
			}
			r.hostd = append(r.hostd, h1[0]-h0[0])
			r.agent = append(r.agent, a1[0]-a0[0])
			r.command = append(r.command, h1[1]-h0[1])
		}
	}
	for _, r := range rows {
		b.ReportMetric(median(r.took), r.name+"-us")
		for _, c := range []struct {
			name string
			xs   []float64
		}{{"client", r.client}, {"hostd", r.hostd}, {"agent", r.agent}, {"command", r.command}} {
			if len(c.xs) > 0 {
				b.ReportMetric(mean(c.xs), r.name+"-"+c.name+"-cpu-us")
			}
		}
	}
}

// procCPU is process pid's CPU time so far, its own and its reaped
// children's, in µs (clock ticks: only a mean over many commands means
// anything).
func procCPU(b *testing.B, pid int) [2]float64 {
	own, children := procTicks(b, pid)
	return [2]float64{float64(own) * 1e4, float64(children) * 1e4} // 1/100 s a tick
}

// mean is the mean of xs.
func mean(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}
