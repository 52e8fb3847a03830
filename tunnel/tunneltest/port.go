package tunneltest

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"testing"
)

// FreeAddr returns a loopback address whose port is free on both TCP and
// UDP, for servers that listen on both.
func FreeAddr(t testing.TB) string {
	t.Helper()
	return net.JoinHostPort("127.0.0.1", FreePort(t, "127.0.0.1"))
}

// FreePort returns a port free on both TCP and UDP on host, chosen below
// the kernel's ephemeral range. A test that restarts its server on the
// same port (a hostd killed and started again) leaves the port unbound for
// a moment; a port from the ephemeral range can be taken in that moment by
// any outgoing socket on the machine (a QUIC client of another test binds
// one), and the restarted server then fails with "address already in use".
// Below the range only another explicit bind can take it.
func FreePort(t testing.TB, host string) string {
	t.Helper()
	low, high := portPool()
	for range 50 {
		port := "0"
		if high > low {
			port = strconv.Itoa(low + rand.IntN(high-low))
		}
		l, err := net.Listen("tcp", net.JoinHostPort(host, port))
		if err != nil {
			continue
		}
		_, port, _ = net.SplitHostPort(l.Addr().String())
		u, err := net.ListenPacket("udp", net.JoinHostPort(host, port))
		l.Close()
		if err == nil {
			u.Close()
			return port
		}
	}
	t.Fatalf("no port free on both TCP and UDP on %s", host)
	return ""
}

// portPool is the range [low, high) FreePort picks from: from 20000 up to
// the start of the ephemeral range, or an empty range (the kernel picks)
// when that leaves fewer than 1000 ports.
func portPool() (low, high int) {
	const floor = 20000
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0, 0
	}
	var first, last int
	if _, err := fmt.Sscan(string(b), &first, &last); err != nil || first-floor < 1000 {
		return 0, 0
	}
	return floor, first
}
