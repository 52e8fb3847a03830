package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/polecat-sidecar/sidecar/agent/creds"
	"github.com/polecat-sidecar/sidecar/agent/supervisor"
	"github.com/polecat-sidecar/sidecar/hostd/pki"
	"github.com/polecat-sidecar/sidecar/tunnel"
	"github.com/polecat-sidecar/sidecar/tunnel/tunneltest"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// BenchmarkReconnectStorm: N agents, each held up by gt-agent's own
// supervisor (its reconnection, backoff and jitter) and beating every 5 s,
// and hostd restarted under them, then started again on the same address
// and town: restart=term stops it with SIGINT (it closes every tunnel, so
// the agents retry at once and back off while it is down), restart=kill
// with SIGKILL (the agents learn of the new hostd from its stateless reset
// when they next send, within a keepalive). Each iteration is one restart;
// it reports how long until every agent had a tunnel again, counted from
// the new hostd's start, and the most tunnels hostd accepted in any one
// second, read from its metrics every 100 ms.
func BenchmarkReconnectStorm(b *testing.B) {
	n := envInt("SIDECAR_BENCH_AGENTS", 2000)
	tw := NewTown(b)
	addr, metrics := tunneltest.FreeAddr(b), tunneltest.FreeAddr(b)
	args := []string{"--log-level", "warn", "--metrics-listen", metrics}
	hostd := tw.ServeOn(addr, args...)
	ca, err := pki.Open(pki.Dir(tw.Dir), "")
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	dir := b.TempDir()
	for i := range n {
		st := stormCreds(b, ca, dir, i)
		// The first connections of 2,000 agents started within seconds are
		// setup, not what is measured: an agent that has not connected
		// within the default 30 s gives up (a container's start would
		// report it), which the herd on two cores can take.
		sup, err := supervisor.New(supervisor.Config{Addr: addr, ServerName: "localhost", Creds: st, Transport: tunnel.TransportQUIC, Logger: quiet, ConnectTimeout: 5 * time.Minute})
		if err != nil {
			b.Fatal(err)
		}
		offset := time.Duration(i) * 5 * time.Second / time.Duration(n)
		wg.Add(2)
		go func() { defer wg.Done(); _ = sup.Run(ctx) }()
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				if s, err := sup.Session(ctx); err == nil {
					beatForever(ctx, s, offset)
				}
			}
		}()
	}
	if _, err := waitTunnels(metrics, n, 3*time.Minute); err != nil {
		b.Fatalf("agents connecting: %v", err)
	}
	for _, sig := range []os.Signal{os.Interrupt, os.Kill} {
		b.Run("restart="+map[os.Signal]string{os.Interrupt: "term", os.Kill: "kill"}[sig], func(b *testing.B) {
			var backs, peaks []float64
			for b.Loop() {
				b.StopTimer()
				_ = hostd.Cmd.Process.Signal(sig)
				_ = hostd.Exited(b, 30*time.Second)
				b.StartTimer()
				start := time.Now()
				type result struct {
					peak int
					err  error
				}
				done := make(chan result, 1)
				go func() { peak, err := waitTunnels(metrics, n, 60*time.Second); done <- result{peak, err} }()
				hostd = tw.ServeOn(addr, args...)
				r := <-done
				if r.err != nil {
					b.Fatalf("after the restart: %v", r.err)
				}
				backs, peaks = append(backs, time.Since(start).Seconds()), append(peaks, float64(r.peak))
			}
			b.ReportMetric(median(backs), "back-s")
			b.ReportMetric(median(peaks), "peak-accepts/s")
		})
	}
}

// median is the middle of xs (the upper middle for an even count).
func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

// stormCreds writes agent i's certificate, key and CA where creds.Load
// reads them, and loads them.
func stormCreds(b *testing.B, ca *pki.CA, dir string, i int) *creds.Store {
	certPEM, keyPEM, err := ca.NewClientKeyPair(wire.Identity{Rig: "bench", Name: fmt.Sprintf("p%04d", i)}, time.Hour)
	if err != nil {
		b.Fatal(err)
	}
	p := creds.Paths{Cert: filepath.Join(dir, fmt.Sprintf("%d.crt", i)), Key: filepath.Join(dir, fmt.Sprintf("%d.key", i)), CA: filepath.Join(dir, "ca.crt")}
	for path, data := range map[string][]byte{p.Cert: certPEM, p.Key: keyPEM, p.CA: ca.CertPEM()} {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			b.Fatal(err)
		}
	}
	st, err := creds.Load(p)
	if err != nil {
		b.Fatal(err)
	}
	return st
}

// waitTunnels polls the metrics of a hostd starting now every 100 ms
// until it holds n tunnels, and returns the most tunnels it accepted
// within one second meanwhile.
func waitTunnels(metrics string, n int, d time.Duration) (peak int, err error) {
	type sample struct {
		at       time.Time
		accepted int
	}
	window := []sample{{time.Now(), 0}}
	deadline := time.Now().Add(d)
	var m map[string]int
	for ; time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if m, err = scrapeValues(metrics, "sidecar_tunnels{", "sidecar_tunnels_accepted_total{"); err != nil {
			continue // not listening yet
		}
		now := sample{time.Now(), m["sidecar_tunnels_accepted_total{"]}
		window = append(window, now)
		for now.at.Sub(window[0].at) > time.Second {
			window = window[1:]
		}
		peak = max(peak, now.accepted-window[0].accepted)
		if m["sidecar_tunnels{"] >= n {
			return peak, nil
		}
	}
	return peak, fmt.Errorf("fewer than %d tunnels after %v: %d, %d accepted in all", n, d, m["sidecar_tunnels{"], m["sidecar_tunnels_accepted_total{"])
}

// scrapeValues sums, for each prefix, the values of hostd's metrics lines
// starting with it (all label sets).
func scrapeValues(addr string, prefixes ...string) (map[string]int, error) {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	sums := map[string]int{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		for _, p := range prefixes {
			if strings.HasPrefix(line, p) {
				v, _ := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
				sums[p] += int(v)
			}
		}
	}
	return sums, sc.Err()
}
