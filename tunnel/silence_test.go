package tunnel_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/polecat-sidecar/sidecar/tunnel"
)

// TestSilentPeerDropped: the server drops a client that has gone silent
// within its idle timeout, even when it writes to that client meanwhile.
// QUIC's own idle timer restarts on such a write (RFC 9000 §10.1): without
// the silence watch the server below would wait until 1.5 s + 2 s.
func TestSilentPeerDropped(t *testing.T) {
	const idle = 2 * time.Second
	cases := []struct {
		transport string
		within    time.Duration // idle, plus the watch's tick (QUIC) or a keepalive period (TCP), plus slack
	}{
		{tunnel.TransportQUIC, idle + idle/8 + 800*time.Millisecond}, // 3.05 s: without the watch, 3.5 s
		{tunnel.TransportTCP, idle + idle/2 + time.Second},           // a ping every idle/2, each waiting up to idle
	}
	for _, c := range cases {
		t.Run(c.transport, func(t *testing.T) {
			cfg := tunnel.Config{IdleTimeout: idle}
			p := newPair(t, c.transport, pairOpts{server: cfg, client: cfg, relay: true})
			mux := tunnel.NewServeMux()
			heard := make(chan struct{}) // the server has read the client's last word
			var once sync.Once
			mux.HandleFunc("sink", func(ctx context.Context, st *tunnel.Stream) {
				b := make([]byte, 64)
				for {
					n, err := st.Read(b)
					if n > 0 && string(b[:n]) == "last" {
						once.Do(func() { close(heard) })
					}
					if err != nil {
						return
					}
				}
			})
			go p.client.Serve(context.Background(), mux)
			go p.server.Serve(context.Background(), mux)
			up, err := p.client.OpenStream(context.Background(), "sink", nil)
			if err != nil {
				t.Fatal(err)
			}
			down, err := p.server.OpenStream(context.Background(), "sink", nil)
			if err != nil {
				t.Fatal(err)
			}
			// The client's last word, then silence; the server writes
			// to it once, late, after hearing nothing.
			if _, err := up.Write([]byte("last")); err != nil {
				t.Fatal(err)
			}
			select {
			case <-heard:
			case <-time.After(10 * time.Second):
				t.Fatal("the server never read the client's last word")
			}
			p.relay.Mute(true)
			muted := time.Now()
			time.AfterFunc(idle*3/4, func() { _, _ = down.Write([]byte("are you there")) })
			select {
			case <-p.server.Done():
			case <-time.After(3 * idle):
				t.Fatalf("server still holds a client silent for %v", 3*idle)
			}
			if d := time.Since(muted); d > c.within || d < idle-idle/4 {
				t.Errorf("silent client dropped after %v, want between %v and %v", d, idle-idle/4, c.within)
			}
		})
	}
}

// TestQuietPeerKept: a client that has nothing to say is not silent. Its
// keepalives hold the tunnel open however long it stays quiet, and while
// the server writes to it, its acknowledgements alone do (it then sends
// no keepalives: it hears the server).
func TestQuietPeerKept(t *testing.T) {
	const idle = 2 * time.Second
	for _, tr := range transports {
		for _, serverWrites := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/server-writes=%v", tr, serverWrites), func(t *testing.T) {
				t.Parallel()
				cfg := tunnel.Config{IdleTimeout: idle}
				p := newPair(t, tr, pairOpts{server: cfg, client: cfg})
				if serverWrites {
					mux := tunnel.NewServeMux()
					heard := make(chan struct{}) // the server has read the client's last word
					var once sync.Once
					mux.HandleFunc("sink", func(ctx context.Context, st *tunnel.Stream) {
						b := make([]byte, 64)
						for {
							n, err := st.Read(b)
							if n > 0 && string(b[:n]) == "last" {
								once.Do(func() { close(heard) })
							}
							if err != nil {
								return
							}
						}
					})
					go p.client.Serve(context.Background(), mux)
					down, err := p.server.OpenStream(context.Background(), "sink", nil)
					if err != nil {
						t.Fatal(err)
					}
					tick := time.NewTicker(idle / 4)
					stop := make(chan struct{})
					t.Cleanup(func() { tick.Stop(); close(stop) })
					go func() {
						for {
							select {
							case <-stop:
								return
							case <-tick.C:
							}
							if _, err := down.Write([]byte("more")); err != nil {
								return
							}
						}
					}()
				}
				select {
				case <-p.server.Done():
					t.Fatalf("quiet client dropped: %v", p.server.Err())
				case <-p.client.Done():
					t.Fatalf("client ended: %v", p.client.Err())
				case <-time.After(3 * idle):
				}
			})
		}
	}
}
