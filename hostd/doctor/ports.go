package doctor

import (
	"context"
	"errors"
	"fmt"
	"net"
	"syscall"
	"time"

	"github.com/polecat-sidecar/sidecar/hostd/api"
	"github.com/polecat-sidecar/sidecar/hostd/state"
)

// controlTimeout bounds asking hostd serve on the control socket.
const controlTimeout = 5 * time.Second

// Control checks the town's control socket: hostd serve answering there.
// It also returns serve's status when it answers (nil when not), for
// Ports to tell serve's ports from another program's.
func Control(ctx context.Context, town string) (Line, *api.Status) {
	const check = "control-socket"
	sock := state.For(town).Socket()
	ctx, cancel := context.WithTimeout(ctx, controlTimeout)
	defer cancel()
	st, err := api.NewSocketClient(state.For(town).Socket()).Status(ctx)
	switch {
	case errors.Is(err, api.ErrNotRunning):
		return warn(check, "start it: 'hostd serve' (README: Running hostd as a service)", "hostd serve is not running: nothing answers at %s", sock), nil
	case err != nil:
		return fail(check, "restart hostd serve", "%v", err), nil
	}
	return ok(check, "hostd serve %s answers at %s, up since %s, tunnel on %s", st.Version, sock, st.Started.Format(time.RFC3339), st.Listen), &st
}

// Port is a listener hostd serve opens.
type Port struct {
	// Check names it in the report.
	Check string
	// Network is "udp" or "tcp"; Addr is its address as Setting gives it.
	Network, Addr string
	// Setting is the setting that gives it.
	Setting string
}

// ServePorts are the listeners hostd serve opens with these settings: the
// tunnel's port on UDP (QUIC) and TCP (listen), and the admin API's and
// metrics' when set.
func ServePorts(listen, admin, metrics string) []Port {
	ports := []Port{{"tunnel-udp", "udp", listen, "listen"}, {"tunnel-tcp", "tcp", listen, "listen"}}
	if admin != "" {
		ports = append(ports, Port{"admin-listen", "tcp", admin, "admin_listen"})
	}
	if metrics != "" {
		ports = append(ports, Port{"metrics-listen", "tcp", metrics, "metrics_listen"})
	}
	return ports
}

// Ports checks that each of ports is free (bound for a moment, then let
// go) or held by hostd serve, whose status served is (nil when serve does
// not answer): a port in use is serve's when serve answers, and for the
// tunnel, when serve's own listen address has that port.
func Ports(ports []Port, served *api.Status) []Line {
	var lines []Line
	for _, p := range ports {
		lines = append(lines, checkPort(p, served))
	}
	return lines
}

func checkPort(p Port, served *api.Status) Line {
	_, port, err := net.SplitHostPort(p.Addr)
	if err != nil {
		return fail(p.Check, fmt.Sprintf("set %s to host:port (\":9876\")", p.Setting), "%s %q: %v", p.Setting, p.Addr, err)
	}
	if port == "0" {
		return ok(p.Check, "%s %s: a free port chosen at start", p.Network, p.Addr)
	}
	servedPort := ""
	if served != nil {
		_, servedPort, _ = net.SplitHostPort(served.Listen)
	}
	tunnel := p.Setting == "listen"
	err = bind(p.Network, p.Addr)
	switch {
	case err == nil && tunnel && served != nil && servedPort != port:
		return warn(p.Check, "set listen in config.yaml to the port hostd serve runs with, or restart serve without --listen",
			"%s %s is free, but hostd serve listens on %s: hostd run gives containers port %s, which nothing serves", p.Network, p.Addr, served.Listen, port)
	case err == nil:
		return ok(p.Check, "%s %s is free", p.Network, p.Addr)
	case !errors.Is(err, syscall.EADDRINUSE):
		return fail(p.Check, fmt.Sprintf("set %s to an address of this machine (ports below 1024 need privileges)", p.Setting),
			"cannot listen on %s %s: %v", p.Network, p.Addr, err)
	case served != nil && (!tunnel || servedPort == port):
		return ok(p.Check, "%s %s is held by hostd serve", p.Network, p.Addr)
	}
	who := "another program"
	switch {
	case tunnel && served != nil:
		who = "another program (this town's hostd serve listens on " + served.Listen + ")"
	case tunnel:
		who = "another program (gt-proxy-server, or another town's hostd?)"
	}
	return fail(p.Check, fmt.Sprintf("stop what holds it ('lsof -i :%s'), or set %s to a free port", port, p.Setting),
		"%s %s is taken by %s", p.Network, p.Addr, who)
}

// bind listens on addr over network and stops at once.
func bind(network, addr string) error {
	if network == "udp" {
		c, err := net.ListenPacket(network, addr)
		if err == nil {
			c.Close()
		}
		return err
	}
	l, err := net.Listen(network, addr)
	if err == nil {
		l.Close()
	}
	return err
}
