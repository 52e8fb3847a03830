package e2e

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/polecat-sidecar/sidecar/hostd/pki"
	"github.com/polecat-sidecar/sidecar/tunnel/tunneltest"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// Relay benchmarks, each in one run:
//   impl=direct   the stand-in command run directly (no relay at all)
//   impl=ours     the gt shim -> gt-agent -> tunnel -> hostd -> command
//   impl=percall  what Gas Town's proxy does today: a fresh client process
//                 makes a fresh mTLS HTTPS connection and one JSON POST per
//                 command, and the server buffers the whole output
// rtt=N is a round-trip delay injected between container and host by a
// userspace relay (the same relay for ours and percall).

// perCallEnv switches the test binary into the per-call client, which
// connects from the network namespace in perCallNetnsEnv when it is set.
const (
	perCallEnv      = "SIDECAR_PERCALL_URL"
	perCallNetnsEnv = "SIDECAR_PERCALL_NETNS"
)

type perCallResponse struct {
	Stdout   []byte `json:"stdout"`
	Stderr   []byte `json:"stderr"`
	ExitCode int    `json:"exitCode"`
}

// perCallClient is the baseline's client process: one connection, one
// POST, as Gas Town's proxy client does per command.
func perCallClient(args []string) int {
	r, err := perCall(os.Getenv(perCallEnv), os.Getenv("SIDECAR_PERCALL_CERTS"), os.Getenv(perCallNetnsEnv), args)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 255
	}
	os.Stdout.Write(r.Stdout)
	os.Stderr.Write(r.Stderr)
	return r.ExitCode
}

// perCall makes a fresh mTLS connection with the credentials in certs,
// from the network namespace netns ("": this process's), and POSTs one
// command.
func perCall(url, certs, netns string, args []string) (perCallResponse, error) {
	cert, err := tls.LoadX509KeyPair(filepath.Join(certs, "client.crt"), filepath.Join(certs, "client.key"))
	if err != nil {
		return perCallResponse{}, err
	}
	caPEM, _ := os.ReadFile(filepath.Join(certs, "ca.crt"))
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true, DialContext: dialIn(netns), TLSClientConfig: &tls.Config{
		Certificates: []tls.Certificate{cert}, RootCAs: pool, ServerName: "localhost", MinVersion: tls.VersionTLS13}}}
	body, _ := json.Marshal(map[string][]string{"argv": args})
	resp, err := hc.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		return perCallResponse{}, err
	}
	defer resp.Body.Close()
	var r perCallResponse
	err = json.NewDecoder(resp.Body).Decode(&r)
	return r, err
}

// relayInProc is our relay without the shim's process: the same frames on
// the agent's socket, from this process.
func relayInProc(socket string, req []byte) error {
	c, err := net.Dial("unix", socket)
	if err != nil {
		return err
	}
	defer c.Close()
	w := wire.NewRelayFrameWriter(c)
	if err := w.Frame(wire.RelayFrameRequest, req); err != nil {
		return err
	}
	_ = w.Frame(wire.RelayFrameStdinClose, nil)
	fr := wire.NewRelayFrameReader(c)
	for {
		typ, p, err := fr.Next()
		if err != nil {
			return err
		}
		switch typ {
		case wire.RelayFrameExit:
			return nil
		case wire.RelayFrameError:
			return errors.New(string(p))
		}
	}
}

// perCallServer is the baseline's server, with hostd's CA and certificate,
// on the rig's host side.
func perCallServer(b *testing.B, r *relayRig, fake string) string {
	ca, err := pki.Open(pki.Dir(r.tw.Dir), "")
	if err != nil {
		b.Fatal(err)
	}
	cert, err := ca.ServerCert([]string{"localhost"}, []net.IP{net.IPv4(127, 0, 0, 1)}, time.Hour)
	if err != nil {
		b.Fatal(err)
	}
	ln := tls.NewListener(r.ends.listen(b), &tls.Config{Certificates: []tls.Certificate{cert}, ClientCAs: ca.Pool(),
		ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS13})
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		var in struct{ Argv []string }
		if err := json.NewDecoder(req.Body).Decode(&in); err != nil || len(in.Argv) < 1 {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		cmd := exec.Command(fake, in.Argv[1:]...)
		cmd.Dir = r.tw.Dir
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		_ = cmd.Run()
		_ = json.NewEncoder(w).Encode(perCallResponse{out.Bytes(), errb.Bytes(), cmd.ProcessState.ExitCode()})
	})}
	go srv.Serve(ln)
	b.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

// unbudgeted lifts relay.commands_per_minute for a benchmark, whose loop
// relays more commands in a second than the budget lets a polecat start
// in a minute: the benchmarks measure the relay, not its budget.
var unbudgeted = []string{"--relay-commands-per-minute", "1000000000"}

// latencies runs op once per iteration and reports p50 and p99.
func latencies(b *testing.B, op func() error) {
	var ds []time.Duration
	for b.Loop() {
		t0 := time.Now()
		if err := op(); err != nil {
			b.Fatal(err)
		}
		ds = append(ds, time.Since(t0))
	}
	slices.Sort(ds)
	b.ReportMetric(float64(ds[len(ds)/2].Microseconds()), "p50-us")
	b.ReportMetric(float64(ds[len(ds)*99/100].Microseconds()), "p99-us")
}

func runQuiet(cmd *exec.Cmd) error {
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%v: %s", err, out)
	}
	return nil
}

// BenchmarkRelayRoundTrip: a trivial command (the stand-in exiting 0).
// client=process starts a client process per command (our gt shim; the
// per-call client), as a polecat does; client=inproc sends the same
// request from the benchmark's own process, to show what the mechanism
// costs apart from starting a Go binary. impl=link is one datagram echoed
// through the same kind of delaying relay: the round trip the link really
// adds (the relay's timers fire late by a little), to count the others'
// round trips in. impl=hello starts a static Go program that does
// nothing: with impl=direct and impl=link it makes the floor a relayed
// command cannot go below (a Go client's start, the command itself, one
// round trip).
func BenchmarkRelayRoundTrip(b *testing.B) {
	rb := newRelayBench(b, ends{})
	hello := buildHello(b)
	for _, rtt := range []time.Duration{0, 10 * time.Millisecond} {
		b.Run(fmt.Sprintf("rtt=%dms", rtt.Milliseconds()), func(b *testing.B) {
			direct := func() error { return runQuiet(exec.Command(rb.fake, rb.args[1:]...)) }
			extra := []relayRow{{"client=process/impl=direct", direct}, {"client=inproc/impl=direct", direct}}
			if rtt == 0 {
				extra = append(extra, relayRow{"client=process/impl=hello", func() error { return runQuiet(exec.Command(hello)) }})
			}
			rb.rows(b, rtt, extra)
		})
	}
}

// BenchmarkWANRelay: BenchmarkRelayRoundTrip's relayed rows with hostd
// and the per-call server at one end of an emulated link and the agent
// and the clients at the other, 50 ms round trip and each loss rate, and
// on a link with no delay and no loss (rtt=0ms), the local cost through
// the same emulator. impl=link is one datagram echoed across the link.
func BenchmarkWANRelay(b *testing.B) {
	run := func(b *testing.B, e ends) { newRelayBench(b, e).rows(b, 0, nil) }
	b.Run("rtt=0ms", func(b *testing.B) {
		b.Run("loss=0pct", func(b *testing.B) { run(b, ends{wanLink(b, 0, 0, 0)}) })
	})
	b.Run(fmt.Sprintf("rtt=%dms", 2*wanDelay.Milliseconds()), func(b *testing.B) { eachLoss(b, 0, run) })
}

// relayBench is a relay rig with the per-call baseline's server and a link
// probe beside it, on the same ends; locally, with a delaying relay in
// front of each.
type relayBench struct {
	r                     *relayRig
	fake, pcURL           string
	args                  []string
	req                   []byte
	probe                 *linkProbe
	ours, percall, linkRe *tunneltest.Relay // the delaying relays, nil on a link
}

// relayRow is one sub-benchmark of the relay's: a name and the operation
// it times.
type relayRow struct {
	name string
	op   func() error
}

func newRelayBench(b *testing.B, e ends) *relayBench {
	rb := &relayBench{args: []string{"gt", "nudge", "exit", "0"}}
	rb.fake, _ = filepath.Abs("testdata/fake-gt.sh")
	rb.r = newRelayRig(b, rigOpts{serve: unbudgeted, viaRelay: e.link == nil, ends: e})
	pcAddr := perCallServer(b, rb.r, rb.fake)
	rb.pcURL = "https://" + pcAddr + "/v1/exec"
	if e.link == nil {
		rb.percall = tunneltest.NewRelay(b, pcAddr)
		rb.pcURL = "https://localhost:" + portOf(rb.percall.Addr) + "/v1/exec"
	}
	var err error
	if rb.req, err = wire.EncodeRelayRequest(wire.RelayRequest{Argv: byteArgs(rb.args...)}); err != nil {
		b.Fatal(err)
	}
	rb.probe = newLinkProbe(b, e)
	rb.ours, rb.linkRe = rb.r.relay, rb.probe.relay
	return rb
}

// rows runs the relayed rows, the extra ones first, with the delaying
// relays (when there are) set to rtt for each.
func (rb *relayBench) rows(b *testing.B, rtt time.Duration, extra []relayRow) {
	run := func(sub string, delay *tunneltest.Relay, op func() error) {
		b.Run(sub, func(b *testing.B) {
			if delay != nil {
				delay.SetDelay(rtt / 2)
				defer delay.SetDelay(0)
			}
			latencies(b, op)
		})
	}
	for _, row := range extra {
		run(row.name, nil, row.op)
	}
	self, _ := os.Executable()
	netns := rb.r.ends.netns().Agent
	run("client=process/impl=ours", rb.ours, func() error { return runQuiet(rb.r.command("gt", rb.args[1:]...)) })
	run("client=process/impl=percall", rb.percall, func() error {
		cmd := exec.Command(self, rb.args...)
		cmd.Env = append(os.Environ(), perCallEnv+"="+rb.pcURL, "SIDECAR_PERCALL_CERTS="+rb.r.certs, perCallNetnsEnv+"="+netns)
		return runQuiet(cmd)
	})
	run("client=inproc/impl=ours", rb.ours, func() error { return relayInProc(rb.r.socket, rb.req) })
	run("client=inproc/impl=link", rb.linkRe, rb.probe.roundTrip)
	run("client=inproc/impl=percall", rb.percall, func() error {
		resp, err := perCall(rb.pcURL, rb.r.certs, netns, rb.args)
		if err == nil && resp.ExitCode != 0 {
			err = fmt.Errorf("exit %d", resp.ExitCode)
		}
		return err
	})
}

// linkProbe echoes one datagram from the polecat's side to the host's:
// locally through a delaying relay.
type linkProbe struct {
	relay *tunneltest.Relay
	conn  *net.UDPConn
	buf   []byte
	seq   uint64
}

func newLinkProbe(b *testing.B, e ends) *linkProbe {
	var echo *net.UDPConn
	err := e.onHost(func() (err error) {
		echo, err = net.ListenUDP("udp4", &net.UDPAddr{IP: net.ParseIP(e.hostIP())})
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { echo.Close() })
	go func() {
		buf := make([]byte, 64)
		for {
			n, from, err := echo.ReadFrom(buf)
			if err != nil {
				return
			}
			_, _ = echo.WriteTo(buf[:n], from)
		}
	}()
	p := &linkProbe{buf: make([]byte, 64)}
	target := echo.LocalAddr().String()
	if e.link == nil {
		p.relay = tunneltest.NewRelay(b, target)
		target = p.relay.Addr
	}
	err = e.onAgent(func() (err error) {
		p.conn, err = net.DialUDP("udp4", nil, net.UDPAddrFromAddrPort(netip.MustParseAddrPort(target)))
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { p.conn.Close() })
	return p
}

// roundTrip sends a numbered datagram and waits for its echo, sending it
// again after a second without (a lossy link drops some), up to 5 times.
func (l *linkProbe) roundTrip() error {
	l.seq++
	ping := binary.BigEndian.AppendUint64(nil, l.seq)
	for range 5 {
		if _, err := l.conn.Write(ping); err != nil {
			return err
		}
		_ = l.conn.SetReadDeadline(time.Now().Add(time.Second))
		for {
			n, err := l.conn.Read(l.buf)
			if errors.Is(err, os.ErrDeadlineExceeded) {
				break
			}
			if err != nil || bytes.Equal(l.buf[:n], ping) {
				return err
			}
		}
	}
	return fmt.Errorf("no echo of datagram %d in 5 tries", l.seq)
}

func portOf(addr string) string {
	_, p, _ := net.SplitHostPort(addr)
	return p
}

// BenchmarkRelayStdout: 64 MiB of a command's stdout, relayed or not.
func BenchmarkRelayStdout(b *testing.B) {
	const size = 64 << 20
	fake, _ := filepath.Abs("testdata/fake-gt.sh")
	r := newRelayRig(b, rigOpts{serve: unbudgeted})
	drain := func(cmd *exec.Cmd) error {
		out, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			return err
		}
		n, _ := io.Copy(io.Discard, out)
		if err := cmd.Wait(); err != nil || n != size {
			return fmt.Errorf("%d bytes, %v", n, err)
		}
		return nil
	}
	b.Run("impl=direct", func(b *testing.B) {
		b.SetBytes(size)
		for b.Loop() {
			if err := drain(exec.Command(fake, "nudge", "zeros", strconv.Itoa(size))); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("impl=ours", func(b *testing.B) {
		b.SetBytes(size)
		for b.Loop() {
			if err := drain(r.command("gt", "nudge", "zeros", strconv.Itoa(size))); err != nil {
				b.Fatal(err)
			}
		}
	})
}
