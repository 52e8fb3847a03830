package e2e

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/polecat-sidecar/sidecar/hostd/api"

	"github.com/polecat-sidecar/sidecar/heartbeat"
	"github.com/polecat-sidecar/sidecar/hostd/pki"
	"github.com/polecat-sidecar/sidecar/tunnel"
	"github.com/polecat-sidecar/sidecar/tunnel/tunneltest"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// BenchmarkHostdAgents: one hostd holding N agents, each with its own
// tunnel (QUIC, default keepalive) beating every 5s with a realistic beat,
// beside the same hostd with none. It reports hostd's CPU (% of one core)
// over a 10s window, its RSS, and times 'hostd status --json' (the
// control API call behind it) as the operation. With
// SIDECAR_BENCH_CPUPROFILE set it writes hostd's CPU profile over the
// window there; SIDECAR_BENCH_IDLE_TIMEOUT sets both ends' idle timeout
// (the keepalive is half of it).
func BenchmarkHostdAgents(b *testing.B) {
	n := envInt("SIDECAR_BENCH_AGENTS", 2000)
	for _, agents := range []int{0, n} {
		b.Run(fmt.Sprintf("agents=%d", agents), func(b *testing.B) { benchAgents(b, agents) })
	}
}

func benchAgents(b *testing.B, n int) {
	tw := NewTown(b)
	metrics := tunneltest.FreeAddr(b)
	args, cfg := []string{"--log-level", "warn", "--metrics-listen", metrics}, tunnel.Config{}
	if idle := os.Getenv("SIDECAR_BENCH_IDLE_TIMEOUT"); idle != "" {
		d, err := time.ParseDuration(idle)
		if err != nil {
			b.Fatal(err)
		}
		args, cfg.IdleTimeout, cfg.KeepAlive = append(args, "--idle-timeout", idle), d, d/2
	}
	hostd, addr := tw.Serve(args...)
	ca, err := pki.Open(pki.Dir(tw.Dir), "")
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	for i := range n {
		cert := benchCert(b, ca, i)
		s, err := tunnel.Dial(ctx, addr, tunnel.ClientConfig{
			GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &cert, nil },
			RootCAs:              ca.Pool(), ServerName: "localhost", Transport: tunnel.TransportQUIC, Config: cfg})
		if err != nil {
			b.Fatalf("agent %d: %v", i, err)
		}
		defer s.Close()
		wg.Add(1)
		go func() { defer wg.Done(); beatForever(ctx, s, time.Duration(i)*5*time.Second/time.Duration(max(n, 1))) }()
	}
	if n > 0 {
		tw.WaitStatus(30*time.Second, func(st api.Status) bool {
			working := 0
			for _, p := range st.Polecats {
				if p.State == "working" {
					working++
				}
			}
			return working == n
		})
	}
	pid := hostd.Cmd.Process.Pid
	cpu0, t0 := cpuTicks(b, pid), time.Now()
	steadyWindow(b, metrics, 10*time.Second)
	cpu := float64(cpuTicks(b, pid)-cpu0) / 100 / time.Since(t0).Seconds() * 100
	rss := procStatus(b, pid, "VmRSS:")
	c := tw.Client()
	for b.Loop() {
		st, err := c.Status(context.Background())
		if err != nil || len(st.Polecats) != n {
			b.Fatalf("status: %d polecats, %v", len(st.Polecats), err)
		}
	}
	b.ReportMetric(cpu, "cpu-%")
	b.ReportMetric(float64(rss), "rss-KiB")
	cancel()
	wg.Wait()
}

// steadyWindow waits out the measured window, taking hostd's CPU profile
// over it when asked (profileHostd).
func steadyWindow(b *testing.B, metrics string, d time.Duration) {
	wait := profileHostd(b, metrics, d)
	time.Sleep(d)
	wait()
}

// profileHostd takes the CPU profile of the hostd serving metrics over the
// next d (whole seconds) into $SIDECAR_BENCH_CPUPROFILE, for 'go tool
// pprof', when that is set. wait returns once it is written; at once when
// nothing is taken.
func profileHostd(b *testing.B, metrics string, d time.Duration) (wait func()) {
	path := os.Getenv("SIDECAR_BENCH_CPUPROFILE")
	if path == "" {
		return func() {}
	}
	done := make(chan error, 1)
	go func() {
		resp, err := http.Get(fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", metrics, max(1, int(d.Seconds()))))
		if err != nil {
			done <- err
			return
		}
		defer resp.Body.Close()
		f, err := os.Create(path)
		if err == nil {
			_, err = io.Copy(f, resp.Body)
			err = errors.Join(err, f.Close())
		}
		done <- err
	}()
	return func() {
		if err := <-done; err != nil {
			b.Fatalf("taking hostd's CPU profile: %v", err)
		}
	}
}

// benchCert issues agent i's certificate from this round's CA.
func benchCert(b *testing.B, ca *pki.CA, i int) tls.Certificate {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	leaf, err := ca.IssueClient(wire.Identity{Rig: "bench", Name: fmt.Sprintf("p%04d", i)}, key.Public(), time.Hour, pki.SourceIssue)
	if err != nil {
		b.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{leaf.Raw}, PrivateKey: key, Leaf: leaf}
}

// beatForever sends a realistic beat every 5s after an initial offset.
func beatForever(ctx context.Context, s *tunnel.Session, offset time.Duration) {
	st, err := s.OpenStream(ctx, wire.KindHeartbeat, nil)
	if err != nil {
		return
	}
	defer st.Close()
	w := heartbeat.NewWriter(st)
	beat := &heartbeat.Beat{Interval: 5, Session: heartbeat.Session{Name: "polecat", Command: "claude --dangerously-skip-permissions",
		State: heartbeat.SessionRunning, Processes: 48, Names: []string{"bash", "claude", "git", "node", "sh"}, CPUSeconds: 812.4,
		CPUPercent: 12.5, RSSBytes: 412 << 20, Threads: 96, IdleSeconds: 3},
		Container: heartbeat.Container{Load1: 0.8, MemAvailable: 6 << 30, DiskFree: 40 << 30},
		Agent:     heartbeat.Agent{Version: "bench", Uptime: 3600, Transport: "quic", RTTMillis: 0.4}}
	select {
	case <-time.After(offset):
	case <-ctx.Done():
		return
	}
	t := time.NewTicker(5 * time.Second)
	defer t.Stop()
	for {
		beat.Seq++
		if w.Write(beat) != nil {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// cpuTicks is a process's user+system CPU time in clock ticks (1/100 s).
func cpuTicks(b testing.TB, pid int) int {
	own, _ := procTicks(b, pid)
	return own
}

// procTicks is a process's user+system CPU time in clock ticks (1/100
// s): its own, and its reaped children's.
func procTicks(b testing.TB, pid int) (own, children int) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	f := strings.Fields(string(data)[strings.LastIndex(string(data), ")")+2:]) // f[0] is field 3
	tick := func(i int) int { n, _ := strconv.Atoi(f[i]); return n }
	return tick(11) + tick(12), tick(13) + tick(14)
}

// procStatus reads a KiB field of /proc/<pid>/status.
func procStatus(b *testing.B, pid int, field string) int {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, field) {
			n, _ := strconv.Atoi(strings.Fields(line)[1])
			return n
		}
	}
	return 0
}
