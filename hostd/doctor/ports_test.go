package doctor

import (
	"context"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/polecat-sidecar/sidecar/hostd/api"
	"github.com/polecat-sidecar/sidecar/hostd/server"
	"github.com/polecat-sidecar/sidecar/hostd/state"
	"github.com/polecat-sidecar/sidecar/internal/unixsock/unixsocktest"
	"github.com/polecat-sidecar/sidecar/tunnel/tunneltest"
)

// serve runs a hostd server for a new town with a CA, its tunnel on a
// free loopback port, until the test ends; it returns the town and that
// address once the control socket answers.
func serve(t *testing.T) (town, addr string) {
	t.Helper()
	town = unixsocktest.Dir(t)
	newCA(t, town)
	addr = tunneltest.FreeAddr(t)
	s, err := server.New(server.Config{Town: town, Listen: addr, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if _, err := api.NewSocketClient(state.For(town).Socket()).Status(ctx); err == nil {
			return town, addr
		}
	}
	t.Fatal("hostd's control socket did not come up in 30 s")
	return "", ""
}

// TestControl: a hostd serve answering on the town's control socket is
// ok, and holds its tunnel's ports; no daemon is a warning; a socket that
// does not answer as hostd does is a failure.
func TestControl(t *testing.T) {
	town, addr := serve(t)
	l, served := Control(context.Background(), town)
	expect(t, l, OK, "tunnel on "+addr, "")
	if served == nil || served.Listen != addr {
		t.Fatalf("served %+v, want hostd's status, listening on %s", served, addr)
	}
	for _, l := range Ports(ServePorts(addr, "", ""), served) {
		expect(t, l, OK, "is held by hostd serve", "")
	}
	for _, l := range Ports(ServePorts(addr, "", ""), nil) {
		expect(t, l, Fail, "is taken by another program (gt-proxy-server", "lsof")
	}

	none := unixsocktest.Dir(t)
	l, served = Control(context.Background(), none)
	expect(t, l, Warn, "hostd serve is not running", "hostd serve")
	if served != nil {
		t.Errorf("no daemon, yet served %+v", served)
	}

	mute := unixsocktest.Dir(t)
	sock := state.For(mute).Socket()
	if err := os.MkdirAll(filepath.Dir(sock), 0o700); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	l, _ = Control(context.Background(), mute)
	expect(t, l, Fail, sock, "restart hostd serve")
}

// TestPorts: each of hostd serve's ports is free, or held by the serve
// that answers (for the tunnel, on that port); taken by anything else, or
// not an address of this machine, it fails. Ports are taken by real
// listeners.
func TestPorts(t *testing.T) {
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tcp.Close() })
	udp, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { udp.Close() })
	taken, takenUDP, free := tcp.Addr().String(), udp.LocalAddr().String(), tunneltest.FreeAddr(t)
	elsewhere := &api.Status{Listen: free}
	here := &api.Status{Listen: taken}
	tests := []struct {
		name      string
		port      Port
		served    *api.Status
		status    Status
		want, fix string
	}{
		{"free", Port{"tunnel-tcp", "tcp", free, "listen"}, nil, OK, "is free", ""},
		{"free udp", Port{"tunnel-udp", "udp", free, "listen"}, nil, OK, "is free", ""},
		{"any port", Port{"tunnel-tcp", "tcp", "127.0.0.1:0", "listen"}, nil, OK, "a free port chosen at start", ""},
		{"taken", Port{"metrics-listen", "tcp", taken, "metrics_listen"}, nil, Fail, "is taken by another program", "set metrics_listen to a free port"},
		{"udp taken", Port{"tunnel-udp", "udp", takenUDP, "listen"}, nil, Fail, "is taken by another program (gt-proxy-server", "set listen"},
		{"taken, serve answering", Port{"admin-listen", "tcp", taken, "admin_listen"}, elsewhere, OK, "is held by hostd serve", ""},
		{"the tunnel's, serve on it", Port{"tunnel-tcp", "tcp", taken, "listen"}, here, OK, "is held by hostd serve", ""},
		{"the tunnel's, serve on another", Port{"tunnel-tcp", "tcp", taken, "listen"}, elsewhere, Fail, "this town's hostd serve listens on " + free, "lsof"},
		{"free, serve on another", Port{"tunnel-tcp", "tcp", free, "listen"}, here, Warn, "hostd serve listens on " + taken, "set listen in config.yaml"},
		{"no port", Port{"tunnel-tcp", "tcp", "9876", "listen"}, nil, Fail, "missing port", "host:port"},
		{"not this machine's", Port{"tunnel-tcp", "tcp", "192.0.2.1:9876", "listen"}, nil, Fail, "cannot listen on", "an address of this machine"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lines := Ports([]Port{tt.port}, tt.served)
			if len(lines) != 1 {
				t.Fatalf("%d lines for one port", len(lines))
			}
			expect(t, lines[0], tt.status, tt.want, tt.fix)
		})
	}
	if got := ServePorts(":9876", "127.0.0.1:9877", ""); len(got) != 3 || got[0].Network != "udp" || got[1].Network != "tcp" || got[2].Setting != "admin_listen" {
		t.Errorf("ServePorts = %+v, want the tunnel on UDP and TCP, then the admin API", got)
	}
}
