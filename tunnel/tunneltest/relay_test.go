package tunneltest

import (
	"io"
	"net"
	"testing"
	"time"
)

// echo serves TCP and UDP echo on one loopback port until the test ends.
func echo(t *testing.T) string {
	t.Helper()
	addr := FreeAddr(t)
	tcp, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	udp, err := net.ListenPacket("udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tcp.Close(); udp.Close() })
	go func() {
		for {
			c, err := tcp.Accept()
			if err != nil {
				return
			}
			go func() { _, _ = io.Copy(c, c); c.Close() }()
		}
	}()
	go func() {
		buf := make([]byte, 1500)
		for {
			n, from, err := udp.ReadFrom(buf)
			if err != nil {
				return
			}
			_, _ = udp.WriteTo(buf[:n], from)
		}
	}()
	return addr
}

// roundTrip sends msg on c and says whether it came back within wait, and
// how long it took.
func roundTrip(c net.Conn, msg string, wait time.Duration) (bool, time.Duration) {
	start := time.Now()
	_ = c.SetDeadline(start.Add(wait))
	if _, err := c.Write([]byte(msg)); err != nil {
		return false, 0
	}
	b := make([]byte, len(msg))
	if _, err := io.ReadFull(c, b); err != nil || string(b) != msg {
		return false, 0
	}
	return true, time.Since(start)
}

func TestRelay(t *testing.T) {
	r := NewRelay(t, echo(t))
	tests := []struct {
		name                 string
		blockUDP, cut        bool
		delay                time.Duration
		tcpPasses, udpPasses bool
	}{
		{"open", false, false, 0, true, true},
		{"UDP blocked", true, false, 0, true, false},
		{"cut", false, true, 0, false, false},
		{"delayed", false, false, 50 * time.Millisecond, true, true},
		{"open again", false, false, 0, true, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r.BlockUDP(tc.blockUDP)
			r.Cut(tc.cut)
			r.SetDelay(tc.delay)
			for _, network := range []string{"tcp", "udp"} {
				c, err := net.Dial(network, r.Addr)
				if err != nil {
					t.Fatal(err)
				}
				passed, took := roundTrip(c, "hello "+network, 300*time.Millisecond+4*tc.delay)
				c.Close()
				want := map[string]bool{"tcp": tc.tcpPasses, "udp": tc.udpPasses}[network]
				if passed != want {
					t.Errorf("%s round trip passed %v, want %v", network, passed, want)
				}
				if passed && took < 2*tc.delay {
					t.Errorf("%s round trip took %v, want at least %v", network, took, 2*tc.delay)
				}
			}
		})
	}
}
