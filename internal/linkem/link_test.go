package linkem

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/netip"
	"os"
	"slices"
	"sync/atomic"
	"testing"
	"time"
)

// TestLinkUDP sends paced UDP probes from A to an echo server in B across
// a link with delay, jitter and loss: the round trip is twice the delay,
// spread by the jitter, and exactly the packets the seed drops are lost.
func TestLinkUDP(t *testing.T) {
	const n = 2000
	shape := Shape{Delay: 25 * ms, Jitter: 5 * ms, Loss: 0.01, Rate: 20_000_000}
	l := New(t, Config{Shape: shape, Seed: 1})

	var server net.PacketConn
	run(t, l.B, func() (err error) {
		server, err = net.ListenPacket("udp4", netip.AddrPortFrom(l.B.Addr, 0).String())
		return err
	})
	t.Cleanup(func() { server.Close() })
	var echoed atomic.Int64
	go func() {
		buf := make([]byte, 64)
		for {
			k, from, err := server.ReadFrom(buf)
			if err != nil {
				return
			}
			if _, err := server.WriteTo(buf[:k], from); err != nil {
				return
			}
			echoed.Add(1)
		}
	}()

	var client *net.UDPConn
	run(t, l.A, func() (err error) {
		client, err = net.DialUDP("udp4", nil, server.LocalAddr().(*net.UDPAddr))
		return err
	})
	t.Cleanup(func() { client.Close() })
	epoch := time.Now()
	var received atomic.Int64
	rtts := make(chan []time.Duration, 1)
	var reordered int
	go func() {
		var got []time.Duration
		defer func() { rtts <- got }()
		buf, last := make([]byte, 64), uint64(0)
		for {
			k, err := client.Read(buf)
			if err != nil || k != 16 {
				return
			}
			seq, sent := binary.BigEndian.Uint64(buf), time.Duration(binary.BigEndian.Uint64(buf[8:]))
			got = append(got, time.Since(epoch)-sent)
			if seq < last {
				reordered++
			}
			last = max(last, seq)
			received.Add(1)
		}
	}()

	pace := time.NewTicker(time.Millisecond)
	defer pace.Stop()
	probe := make([]byte, 16)
	for seq := range uint64(n) {
		<-pace.C
		binary.BigEndian.PutUint64(probe, seq)
		binary.BigEndian.PutUint64(probe[8:], uint64(time.Since(epoch)))
		if _, err := client.Write(probe); err != nil {
			t.Fatalf("sending probe %d: %v", seq, err)
		}
	}
	var ab, ba Stats
	waitFor(t, "every probe and echo delivered or dropped", func() bool {
		ab, ba = l.Stats()
		return ab.Packets == n && ab.InFlight() == 0 && echoed.Load() == ab.Delivered &&
			ba.Packets == ab.Delivered && ba.InFlight() == 0 && received.Load() == ba.Delivered
	})
	client.Close()
	got := <-rtts

	// Exact: the seed decides which packets are lost, and nothing else is.
	if want := predictLost(shape, 1, 1, ab.Packets); ab.Lost != want {
		t.Errorf("A→B lost %d probes, the seed loses %d", ab.Lost, want)
	}
	if want := predictLost(shape, 1, 2, ba.Packets); ba.Lost != want {
		t.Errorf("B→A lost %d echoes, the seed loses %d", ba.Lost, want)
	}
	if ab.Overflow+ba.Overflow != 0 || int64(len(got)) != n-ab.Lost-ba.Lost {
		t.Errorf("%d of %d probes came back with %d+%d lost and %d+%d overflowed: something else dropped packets",
			len(got), n, ab.Lost, ba.Lost, ab.Overflow, ba.Overflow)
	}
	within(t, "round trips lost", n-len(got), n, 1-(1-shape.Loss)*(1-shape.Loss))

	slices.Sort(got)
	pct := func(p int) time.Duration { return got[len(got)*p/100] }
	t.Logf("RTT min %v, p10 %v, median %v, p90 %v, max %v; %d echoes reordered", got[0], pct(10), pct(50), pct(90), got[len(got)-1], reordered)
	if lo := 2 * (shape.Delay - shape.Jitter); got[0] < lo {
		t.Errorf("fastest round trip %v, under the least the link allows, %v", got[0], lo)
	}
	if med, rtt := pct(50), 2*shape.Delay; med < rtt-ms || med > rtt+15*ms {
		t.Errorf("median round trip %v, want %v (-1 ms, +15 ms for scheduling)", med, rtt)
	}
	if spread := pct(90) - pct(10); spread < shape.Jitter {
		t.Errorf("round trips spread %v from p10 to p90: the jitter (±%v each way) does not show", spread, shape.Jitter)
	}
	if reordered == 0 {
		t.Error("no echo overtook another: the jitter reorders nothing")
	}
}

// TestLinkTCPRate sends 6 MiB over TCP from A to B across a 20 Mbit/s
// link with a 50 ms round trip: the data arrives at close to the link's
// rate (slow start and the headers take their share), and the packets
// that carry it never cross faster than the rate.
func TestLinkTCPRate(t *testing.T) {
	const rate, total = 20_000_000, 6 << 20
	l := New(t, Config{Shape: Shape{Delay: 25 * ms, Rate: rate}})
	ln := listen(t, l.B)
	type result struct {
		n   int64
		err error
	}
	done := make(chan result, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			var r result
			r.n, r.err = io.Copy(io.Discard, c)
			c.Close()
			done <- r
			return
		}
		done <- result{err: err}
	}()

	c := dial(t, l.A, ln.Addr())
	start := time.Now()
	if _, err := c.Write(make([]byte, total)); err != nil {
		t.Fatalf("sending %d bytes: %v", total, err)
	}
	c.Close()
	r := <-done
	took := time.Since(start).Seconds()
	if r.err != nil || r.n != total {
		t.Fatalf("received %d of %d bytes: %v", r.n, total, r.err)
	}
	ab, ba := l.Stats()
	goodput, wire := float64(total)*8/took, float64(ab.Bytes)*8/took
	t.Logf("goodput %.2f Mbit/s (%.0f%%), packets %.2f Mbit/s (%.0f%%) on a %d Mbit/s link in %.2f s; A→B %+v, B→A %+v",
		goodput/1e6, 100*goodput/rate, wire/1e6, 100*wire/rate, rate/1_000_000, took, ab, ba)
	if goodput < 0.8*rate {
		t.Errorf("goodput %.2f Mbit/s, under 80%% of %d Mbit/s", goodput/1e6, rate/1_000_000)
	}
	if wire > 1.01*rate {
		t.Errorf("the packets crossed at %.2f Mbit/s, over the link's %d Mbit/s", wire/1e6, rate/1_000_000)
	}
}

// TestLinkCommand runs a real binary in A with Command: bash connects to
// B across the link, and B sees A's address after the handshake's
// round trip and a half.
func TestLinkCommand(t *testing.T) {
	const delay = 10 * ms
	l := New(t, Config{Shape: Shape{Delay: delay}})
	ln := listen(t, l.B)
	port := ln.Addr().(*net.TCPAddr).Port
	cmd := l.A.Command(t.Context(), "bash", "-c", `echo hello >/dev/tcp/$0/$1`, l.B.Addr.String(), fmt.Sprint(port))
	start := time.Now()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %v: %s", cmd, err, out)
	}
	c, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if took := time.Since(start); took < 3*delay {
		t.Errorf("connected in %v, under a round trip and a half (%v)", took, 3*delay)
	}
	if from := c.RemoteAddr().(*net.TCPAddr).AddrPort().Addr(); from != l.A.Addr {
		t.Errorf("connection from %v, want A's address %v", from, l.A.Addr)
	}
	if got, err := io.ReadAll(c); err != nil || string(got) != "hello\n" {
		t.Errorf("read %q, %v; want %q", got, err, "hello\n")
	}
}

// TestLinkTCPCongestion: Config.TCP sets both namespaces' TCP congestion
// control, also one the host does not let namespaces choose (cubic, where
// the host's default is another), and an empty one leaves what the kernel
// gave them; the host's allowed list is as it was once the links are gone.
func TestLinkTCPCongestion(t *testing.T) {
	host, err := os.ReadFile(tcpCongestion)
	if err != nil {
		t.Skipf("no %s here: %v", tcpCongestion, err)
	}
	allowed, err := os.ReadFile(tcpAllowed)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if now, err := os.ReadFile(tcpAllowed); err != nil || string(now) != string(allowed) {
			t.Errorf("the host's allowed congestion controls are %q (%v) after the links, %q before", now, err, allowed)
		}
	})
	for _, set := range []string{"reno", "", "cubic"} {
		t.Run("tcp="+set, func(t *testing.T) {
			if set != "" && !HasTCP(set) {
				t.Skipf("the kernel has no %s", set)
			}
			l := New(t, Config{TCP: set})
			var got [2][]byte
			for i, ns := range []*Namespace{l.A, l.B} {
				run(t, ns, func() (err error) { got[i], err = os.ReadFile(tcpCongestion); return err })
			}
			if got[0] == nil || string(got[0]) != string(got[1]) {
				t.Fatalf("A has %q, B %q: want the same", got[0], got[1])
			}
			if set != "" && string(got[0]) != set+"\n" {
				t.Errorf("congestion control %q, want %q", got[0], set)
			}
			t.Logf("host %q, namespaces %q", bytes.TrimSpace(host), bytes.TrimSpace(got[0]))
		})
	}
}

// TestLinkTornDown: a link's namespaces are gone when its test ends.
func TestLinkTornDown(t *testing.T) {
	var names []string
	t.Run("link", func(t *testing.T) {
		l := New(t, Config{})
		for _, ns := range []*Namespace{l.A, l.B} {
			if _, err := os.Stat(ns.path()); err != nil {
				t.Fatalf("namespace %s: %v", ns.Name, err)
			}
			names = append(names, ns.path())
		}
	})
	for _, path := range names {
		if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s after its test: %v, want it gone", path, err)
		}
	}
}

// predictLost is how many of n packets the seed's stream loses.
func predictLost(s Shape, seed, stream uint64, n int64) int64 {
	s.Rate = 0 // the loss is drawn before the rate limiter, whatever the timing
	sh := newShaper(s, 1500, seed, stream)
	var k int64
	for range n {
		if _, f := sh.admit(0, 100); f == lost {
			k++
		}
	}
	return k
}

// run runs f in ns, failing t on its error.
func run(t *testing.T, ns *Namespace, f func() error) {
	t.Helper()
	if err := ns.Run(f); err != nil {
		t.Fatalf("in %s: %v", ns.Name, err)
	}
}

// listen listens on TCP at ns's address until the test ends.
func listen(t *testing.T, ns *Namespace) net.Listener {
	t.Helper()
	var ln net.Listener
	run(t, ns, func() (err error) {
		ln, err = net.Listen("tcp4", netip.AddrPortFrom(ns.Addr, 0).String())
		return err
	})
	t.Cleanup(func() { ln.Close() })
	return ln
}

// dial connects from ns to addr; the connection is closed when the test ends.
func dial(t *testing.T, ns *Namespace, addr net.Addr) net.Conn {
	t.Helper()
	var c net.Conn
	run(t, ns, func() (err error) {
		c, err = net.DialTimeout("tcp4", addr.String(), 10*time.Second)
		return err
	})
	t.Cleanup(func() { c.Close() })
	return c
}

// waitFor polls cond until it holds, failing t after 20 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); !cond(); time.Sleep(5 * ms) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}
