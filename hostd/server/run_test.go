package server

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/polecat-sidecar/sidecar/hostd/pki"
	"github.com/polecat-sidecar/sidecar/hostd/sandbox"
	"github.com/polecat-sidecar/sidecar/internal/parts/partstest"
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
				SandboxRuntime: sandbox.CLI{Bin: "/nonexistent/docker"}, SandboxReap: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := partstest.Go(func() error { return s.Run(ctx) })
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
			var r partstest.Result
			select {
			case r = <-done:
			case <-time.After(30 * time.Second):
				t.Fatal("Run did not return")
			}
			if c.wantErr == "" && r.Err != nil || c.wantErr != "" && (r.Err == nil || !strings.Contains(r.Err.Error(), c.wantErr)) {
				t.Errorf("Run: %v, want %q", r.Err, c.wantErr)
			}
			for _, g := range r.Left {
				t.Errorf("goroutine %d, started by Run, still runs after Run returned:\n%s", g.ID, g.Stack)
			}
		})
	}
}
