package tunnel_test

import (
	"context"
	"errors"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/polecat-sidecar/sidecar/tunnel"
	"github.com/polecat-sidecar/sidecar/tunnel/tunneltest"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// waitFor polls cond for up to d.
func waitFor(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if cond() {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return cond()
}

// TestHeaderlessStreamFlood is a peer opening streams it never writes to,
// far past the limit: hostd used to start a goroutine for each while it
// waited for the header. Now the session is closed and everything it held
// goes with it.
func TestHeaderlessStreamFlood(t *testing.T) {
	before := runtime.NumGoroutine()
	p := newPair(t, tunnel.TransportTCP, pairOpts{server: tunnel.Config{MaxStreams: 16}, client: tunnel.Config{MaxStreams: 100000}})
	serveEcho(t, p.server)
	for i := range 5000 {
		if _, err := p.client.OpenStream(context.Background(), wire.KindPing, nil); err != nil {
			t.Logf("client stopped opening at stream %d: %v", i, err)
			break
		}
		// yamux sends the stream's SYN when it is opened: no header follows.
	}
	select {
	case <-p.server.Done():
	case <-time.After(10 * time.Second):
		t.Fatalf("server session still up with the peer far past its stream limit (%d refused)", p.server.Refused())
	}
	if !strings.Contains(p.server.Err().Error(), "stream limit") {
		t.Errorf("session ended with %v, want the stream limit named", p.server.Err())
	}
	p.client.Close()
	if !waitFor(10*time.Second, func() bool { return runtime.NumGoroutine() <= before+10 }) {
		t.Errorf("goroutines: %d before the flood, %d after the attacker left", before, runtime.NumGoroutine())
	}
}

// TestRefusedStreamDataIsDiscarded: whatever a peer sends on a stream
// hostd refused is read and dropped at once, so it holds no buffer and
// the writer is not left blocked on a full window (yamux kept it for five
// minutes). The opener still reads why it was refused: on QUIC its write
// fails with a bare "canceled by remote with error code 0", which Read
// used to return in place of the refusal.
func TestRefusedStreamDataIsDiscarded(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			p := newPair(t, tr, pairOpts{})
			serveEcho(t, p.server)
			for i := range 20 {
				st, err := p.client.OpenStream(context.Background(), "no-such-kind", nil)
				if err != nil {
					t.Fatal(err)
				}
				done := make(chan error, 1)
				go func() {
					_, err := st.Write(make([]byte, 2<<20)) // eight times yamux's initial window
					done <- err
				}()
				select {
				case <-done:
				case <-time.After(10 * time.Second):
					t.Fatalf("stream %d: writing to a refused stream still blocked after 10 s", i)
				}
				_, err = st.Read(make([]byte, 1))
				var re *wire.RemoteError
				if !errors.As(err, &re) || !strings.Contains(re.Reason, `unknown stream kind "no-such-kind"`) {
					t.Fatalf("stream %d: read after writing to a refused stream: %v, want the refusal", i, err)
				}
				st.Close()
			}
			if p.server.Err() != nil {
				t.Fatalf("refused streams ended the session: %v", p.server.Err())
			}
		})
	}
}

// TestStreamBudgetPerIdentity: a second tunnel with the same certificate
// buys no more streams.
func TestStreamBudgetPerIdentity(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			ca := tunneltest.NewCA(t)
			sc := ca.ServerConfig(ca.Server(t))
			sc.Config = tunnel.Config{MaxStreams: 4}
			ln, err := tunnel.Listen("127.0.0.1:0", sc)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { ln.Close() })
			hold := make(chan struct{})
			t.Cleanup(func() { close(hold) })
			mux := tunnel.NewServeMux()
			mux.HandleFunc("hold", func(ctx context.Context, st *tunnel.Stream) {
				_, _ = st.Write([]byte("k"))
				<-hold
			})
			cc := ca.ClientConfig(ca.Client(t, testID))
			cc.Transport = tr
			var clients []*tunnel.Session
			for range 2 {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				c, err := tunnel.Dial(ctx, ln.Addr(), cc)
				if err != nil {
					t.Fatal(err)
				}
				s, err := ln.Accept(ctx)
				cancel()
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { c.Close(); s.Close() })
				go s.Serve(context.Background(), mux)
				clients = append(clients, c)
			}
			open := func(c *tunnel.Session) error {
				st, err := c.OpenStream(context.Background(), "hold", nil)
				if err == nil {
					_, err = st.Read(make([]byte, 1))
				}
				return err
			}
			for i := range 4 {
				if err := open(clients[i%2]); err != nil {
					t.Fatalf("stream %d of 4: %v", i, err)
				}
			}
			err = open(clients[1])
			var re *wire.RemoteError
			if !errors.As(err, &re) || !strings.Contains(err.Error(), "stream limit") {
				t.Fatalf("5th stream across two tunnels of one identity with a limit of 4: %v, want refused", err)
			}
			// Once the identity's tunnels are gone, a new one starts afresh
			// (their handlers still hold their streams).
			for _, c := range clients {
				c.Close()
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			c, err := tunnel.Dial(ctx, ln.Addr(), cc)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			s, err := ln.Accept(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			go s.Serve(context.Background(), mux)
			if !waitFor(5*time.Second, func() bool { return open(c) == nil }) {
				t.Fatal("a new tunnel after the old ones ended cannot open a stream")
			}
		})
	}
}

// TestHandshakeFlood: connections that connect and send nothing, from one
// address, cannot keep a polecat at another address out, and are shed
// rather than held.
func TestHandshakeFlood(t *testing.T) {
	ca := tunneltest.NewCA(t)
	sc := ca.ServerConfig(ca.Server(t))
	sc.Config = tunnel.Config{MaxHandshakes: 64, MaxHandshakesPerSource: 8}
	sc.DisableQUIC = true
	ln, err := tunnel.Listen("127.0.0.1:0", sc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			s, err := ln.Accept(context.Background())
			if err != nil {
				return
			}
			go s.Serve(context.Background(), tunnel.NewServeMux())
		}
	}()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}}
	var flood []net.Conn
	for range 300 {
		c, err := d.Dial("tcp", ln.Addr())
		if err != nil {
			t.Fatalf("flood connection: %v", err)
		}
		flood = append(flood, c)
	}
	t.Cleanup(func() {
		for _, c := range flood {
			c.Close()
		}
	})
	if !waitFor(30*time.Second, func() bool { return ln.Health()[0].Shed >= 250 }) {
		t.Errorf("health %+v: want the flood shed beyond 8 handshakes from its address", ln.Health()[0])
	}
	cc := ca.ClientConfig(ca.Client(t, testID))
	cc.Transport = tunnel.TransportTCP
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := tunnel.Dial(ctx, ln.Addr(), cc)
	if err != nil {
		t.Fatalf("a polecat could not connect during the flood: %v", err)
	}
	c.Close()
	// The polecat's handshake may still hold its place on hostd's side a
	// moment after its Dial returned: the flood's 8 are what must stay.
	if !waitFor(10*time.Second, func() bool { h := ln.Health()[0]; return h.Up && h.Handshakes <= 8 }) {
		t.Errorf("health during the flood: %+v, want up with at most 8 handshakes in progress", ln.Health()[0])
	}
}
