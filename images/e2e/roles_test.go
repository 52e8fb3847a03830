//go:build e2e

package e2e

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/polecat-sidecar/sidecar/agent/creds"
	"github.com/polecat-sidecar/sidecar/tunnel"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// The roles the test binary plays inside a container (E2E_ROLE); each
// prints one JSON value on stdout.
const roleEnv = "E2E_ROLE"

// roles maps a role to its program; args are the binary's arguments.
var roles = map[string]func(args []string) (any, error){
	"dial":    dialRole,
	"listen":  listenRole,
	"latency": latencyRole,
	"procs":   procsRole,
	"hostile": hostileRole,
}

// runRole plays role and returns the exit status.
func runRole(role string, args []string) int {
	f, ok := roles[role]
	if !ok {
		fmt.Fprintf(os.Stderr, "e2e: unknown role %q\n", role)
		return 2
	}
	v, err := f(args)
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e %s: %v\n", role, err)
		return 1
	}
	_ = json.NewEncoder(os.Stdout).Encode(v)
	return 0
}

// dialRole tries a TCP connection to each address and says what happened:
// "connected", "refused" or "timeout" (or the error).
func dialRole(addrs []string) (any, error) {
	out := map[string]string{}
	for _, a := range addrs {
		c, err := net.DialTimeout("tcp", a, 2*time.Second)
		switch {
		case err == nil:
			c.Close()
			out[a] = "connected"
		case strings.Contains(err.Error(), "refused"):
			out[a] = "refused"
		case strings.Contains(err.Error(), "timeout"):
			out[a] = "timeout"
		default:
			out[a] = err.Error()
		}
	}
	return out, nil
}

// listenRole accepts TCP connections on args[0] until killed.
func listenRole(args []string) (any, error) {
	l, err := net.Listen("tcp", args[0])
	if err != nil {
		return nil, err
	}
	for {
		c, err := l.Accept()
		if err != nil {
			return nil, err
		}
		c.Close()
	}
}

// latency is what latencyRole prints: each relayed command's wall time.
type latency struct {
	Millis []float64 `json:"ms"`
	Errors int       `json:"errors"`
	Last   string    `json:"last_error,omitempty"`
}

// median is the middle of l's times.
func (l latency) median() float64 {
	if len(l.Millis) == 0 {
		return 0
	}
	s := append([]float64(nil), l.Millis...)
	sort.Float64s(s)
	return s[len(s)/2]
}

// latencyRole runs 'gt status args ping' args[0] times, one after another,
// through the container's own shim and agent.
func latencyRole(args []string) (any, error) {
	n, err := strconv.Atoi(args[0])
	if err != nil {
		return nil, err
	}
	var l latency
	for range n {
		start := time.Now()
		out, err := exec.Command("gt", "nudge", "args", "ping").CombinedOutput()
		if err == nil && !strings.Contains(string(out), "ping") {
			err = fmt.Errorf("unexpected output %q", out)
		}
		if err != nil {
			l.Errors++
			l.Last = fmt.Sprintf("%v: %s", err, out)
			continue
		}
		l.Millis = append(l.Millis, float64(time.Since(start).Microseconds())/1000)
	}
	return l, nil
}

// procs is what procsRole prints: PID 1's command and the zombies.
type procs struct {
	Init    string   `json:"init"`
	Count   int      `json:"count"`
	Zombies []string `json:"zombies"`
}

// procsRole reads /proc: PID 1's name, how many processes, and which are
// zombies.
func procsRole([]string) (any, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	p := procs{Zombies: []string{}}
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ...
		s := string(b)
		open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || end < open || end+3 > len(s) {
			continue
		}
		comm, state := s[open+1:end], s[end+2]
		p.Count++
		if e.Name() == "1" {
			p.Init = comm
		}
		if state == 'Z' {
			p.Zombies = append(p.Zombies, e.Name()+" "+comm)
		}
	}
	return p, nil
}

// hostileReport is what hostileRole prints: what each attack managed.
type hostileReport struct {
	Tunnels        int64 `json:"tunnels_opened"`
	TunnelsRefused int64 `json:"tunnels_refused"`
	Streams        int64 `json:"streams_opened"`
	StreamsRefused int64 `json:"streams_refused"`
	JunkTCP        int64 `json:"junk_tcp_connections"`
	JunkUDP        int64 `json:"junk_udp_datagrams"`
	Relays         int64 `json:"relays_run"`
	RelaysRefused  int64 `json:"relays_refused"`
}

// hostileRole is a polecat gone bad, root in its container with its own
// valid certificate, for args[0] (a duration): it churns tunnels, opens
// streams past its budget and holds them, sends junk to hostd's port over
// TCP and UDP, and floods the relay with commands whose output it never
// reads. The suite checks the other polecats do not notice.
func hostileRole(args []string) (any, error) {
	d, err := time.ParseDuration(args[0])
	if err != nil {
		return nil, err
	}
	u, err := url.Parse(os.Getenv("GT_PROXY_URL"))
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("GT_PROXY_URL %q: %v", os.Getenv("GT_PROXY_URL"), err)
	}
	st, err := creds.Load(creds.Paths{Cert: "/run/gt-agent/client.crt", Key: "/run/gt-agent/client.key", CA: "/run/gt-agent/ca.crt"})
	if err != nil {
		return nil, err
	}
	dial := func(ctx context.Context, transport string) (*tunnel.Session, error) {
		return tunnel.Dial(ctx, u.Host, tunnel.ClientConfig{GetClientCertificate: st.GetClientCertificate, RootCAs: st.RootCAs(),
			ServerName: u.Hostname(), Transport: transport})
	}
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var r hostileReport
	var wg sync.WaitGroup
	spawn := func(n int, f func()) {
		for range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for ctx.Err() == nil {
					f()
				}
			}()
		}
	}
	// Tunnel churn, alternating transports; each new one closes an older.
	transports := []string{tunnel.TransportQUIC, tunnel.TransportTCP}
	var turn atomic.Int64
	spawn(2, func() {
		c, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		s, err := dial(c, transports[turn.Add(1)%2])
		if err != nil {
			atomic.AddInt64(&r.TunnelsRefused, 1)
			time.Sleep(50 * time.Millisecond)
			return
		}
		atomic.AddInt64(&r.Tunnels, 1)
		time.Sleep(200 * time.Millisecond)
		s.Close()
	})
	// Streams held open past the budget, on a tunnel of their own.
	spawn(1, func() {
		s, err := dial(ctx, tunnel.TransportQUIC)
		if err != nil {
			time.Sleep(100 * time.Millisecond)
			return
		}
		defer s.Close()
		for i := 0; i < 1000 && ctx.Err() == nil; i++ {
			c, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
			_, err := s.OpenStream(c, wire.KindPing, nil)
			cancel()
			if err != nil {
				atomic.AddInt64(&r.StreamsRefused, 1)
				if s.Err() != nil {
					return
				}
				continue
			}
			atomic.AddInt64(&r.Streams, 1)
		}
		<-ctx.Done()
	})
	// Junk on hostd's port: TCP connections that speak no TLS, and UDP
	// datagrams that are no QUIC.
	junk := make([]byte, 1200)
	_, _ = rand.Read(junk)
	spawn(8, func() {
		c, err := net.DialTimeout("tcp", u.Host, time.Second)
		if err != nil {
			return
		}
		atomic.AddInt64(&r.JunkTCP, 1)
		_, _ = c.Write(junk)
		time.Sleep(100 * time.Millisecond)
		c.Close()
	})
	spawn(1, func() {
		c, err := net.Dial("udp", u.Host)
		if err != nil {
			return
		}
		defer c.Close()
		for i := 0; i < 1000 && ctx.Err() == nil; i++ {
			if _, err := c.Write(junk); err == nil {
				atomic.AddInt64(&r.JunkUDP, 1)
			}
			time.Sleep(time.Millisecond)
		}
	})
	// Relays whose output is never read, through the container's agent.
	spawn(16, func() {
		cmd := exec.CommandContext(ctx, "gt", "nudge", "zeros", "100000000")
		out, err := cmd.StdoutPipe()
		if err != nil {
			return
		}
		if cmd.Start() != nil {
			return
		}
		atomic.AddInt64(&r.Relays, 1)
		_, _ = io.CopyN(io.Discard, out, 4096) // then stop reading
		if cmd.Wait() != nil && ctx.Err() == nil {
			atomic.AddInt64(&r.RelaysRefused, 1)
		}
	})
	wg.Wait()
	return r, nil
}
