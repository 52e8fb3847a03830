package tunneltest

import (
	"net"
	"strconv"
	"testing"
)

// TestFreePortBelowEphemeral checks the port is free on both protocols
// and, where the kernel's range leaves room, outside it.
func TestFreePortBelowEphemeral(t *testing.T) {
	low, high := portPool()
	for range 20 {
		port := FreePort(t, "127.0.0.1")
		n, err := strconv.Atoi(port)
		if err != nil {
			t.Fatalf("port %q: %v", port, err)
		}
		if high > low && (n < low || n >= high) {
			t.Errorf("port %d outside [%d, %d)", n, low, high)
		}
		addr := net.JoinHostPort("127.0.0.1", port)
		l, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatalf("tcp %s: %v", addr, err)
		}
		u, err := net.ListenPacket("udp", addr)
		l.Close()
		if err != nil {
			t.Fatalf("udp %s: %v", addr, err)
		}
		u.Close()
	}
}
