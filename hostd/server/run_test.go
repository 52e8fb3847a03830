package server

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/polecat-sidecar/sidecar/hostd/pki"
	"github.com/polecat-sidecar/sidecar/internal/unixsock/unixsocktest"
	"github.com/polecat-sidecar/sidecar/tunnel/tunneltest"
)

// TestRunJoinsItsGoroutines: when Run returns, having been stopped or
// having failed, no goroutine it started (or that one of those started) is
// left running: every part of it has been waited for.
func TestRunJoinsItsGoroutines(t *testing.T) {
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	for _, c := range []struct {
		name    string
		metrics string // "": a free address
		wantErr string // "": stopped, a session up, metrics and admin API served
	}{
		{name: "stopped"},
		{name: "metrics address taken", metrics: held.Addr().String(), wantErr: "serving metrics (metrics_listen): "},
	} {
		t.Run(c.name, func(t *testing.T) {
			town := unixsocktest.Dir(t)
			ca, _, err := pki.Init(pki.Dir(town), "")
			if err != nil {
				t.Fatal(err)
			}
			metricsAddr, adminAddr := c.metrics, tunneltest.FreeAddr(t)
			if metricsAddr == "" {
				metricsAddr = tunneltest.FreeAddr(t)
			}
			s, err := New(Config{Town: town, Listen: tunneltest.FreeAddr(t), Logger: slog.New(slog.DiscardHandler),
				MetricsListen: metricsAddr, AdminListen: adminAddr, Upstream: true,
				SandboxRuntime: "/nonexistent/docker", SandboxReap: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			type result struct {
				err  error
				left []goroutine
			}
			done := make(chan result, 1)
			go func() {
				err := s.Run(ctx)
				done <- result{err, descendants(currentGoroutine())} // at once: what Run left running
			}()
			if c.wantErr == "" {
				f := &fixture{ca: ca, addr: s.cfg.Listen}
				f.waitUp(t)
				f.client(t, time.Hour)
				for _, url := range []string{"http://" + metricsAddr + "/metrics", "http://" + adminAddr + "/v1/admin/health"} {
					hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 5 * time.Second}
					resp, err := hc.Get(url)
					if err != nil {
						t.Fatal(err)
					}
					resp.Body.Close()
				}
				cancel()
			}
			var r result
			select {
			case r = <-done:
			case <-time.After(30 * time.Second):
				t.Fatal("Run did not return")
			}
			if c.wantErr == "" && r.err != nil || c.wantErr != "" && (r.err == nil || !strings.Contains(r.err.Error(), c.wantErr)) {
				t.Errorf("Run: %v, want %q", r.err, c.wantErr)
			}
			for _, g := range r.left {
				t.Errorf("goroutine %d, started by Run, still runs after Run returned:\n%s", g.id, g.stack)
			}
		})
	}
}

// goroutine is one goroutine of runtime.Stack's dump.
type goroutine struct {
	id, parent int
	stack      string
}

var (
	headerRE  = regexp.MustCompile(`^goroutine (\d+) `)
	createdRE = regexp.MustCompile(`(?m)^created by .* in goroutine (\d+)$`)
)

// goroutines parses every goroutine's stack.
func goroutines() []goroutine {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var gs []goroutine
	for _, block := range strings.Split(string(buf), "\n\n") {
		m := headerRE.FindStringSubmatch(block)
		if m == nil {
			continue
		}
		g := goroutine{stack: block}
		g.id, _ = strconv.Atoi(m[1])
		if c := createdRE.FindStringSubmatch(block); c != nil {
			g.parent, _ = strconv.Atoi(c[1])
		}
		gs = append(gs, g)
	}
	return gs
}

// currentGoroutine is the calling goroutine's id.
func currentGoroutine() int {
	buf := make([]byte, 64)
	m := headerRE.FindSubmatch(buf[:runtime.Stack(buf, false)])
	id, _ := strconv.Atoi(string(m[1]))
	return id
}

// exiting tells the goroutines Run cannot wait for: one that has
// returned and is being torn down, and quic-go's, whose Transport.Close
// waits for its read loop but not for the send queues that return after
// it. The goroutines of ours that own quic-go's (the tunnel listener's
// accept loops) are waited for, and counted here.
func exiting(g goroutine) bool {
	return strings.Contains(g.stack, "\nruntime.goexit1(") || strings.Contains(g.stack, "\ncreated by github.com/quic-go/quic-go.")
}

// descendants are the goroutines running now that root started, or that
// one of those started, as far as their "created by ... in goroutine N"
// lines tell (a goroutine whose creator has ended is not counted: its line
// names a goroutine no longer in the dump).
func descendants(root int) []goroutine {
	gs := goroutines()
	parent := map[int]int{}
	for _, g := range gs {
		parent[g.id] = g.parent
	}
	var out []goroutine
	for _, g := range gs {
		if exiting(g) {
			continue
		}
		for p := g.parent; p != 0; p = parent[p] {
			if p == root {
				out = append(out, g)
				break
			}
		}
	}
	return out
}
