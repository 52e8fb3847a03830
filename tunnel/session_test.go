package tunnel_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/polecat-sidecar/sidecar/tunnel"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

func TestSession(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			t.Run("both sides open streams", func(t *testing.T) {
				p := newPair(t, tr, pairOpts{})
				serveEcho(t, p.server)
				serveEcho(t, p.client)
				for name, s := range map[string]*tunnel.Session{"client": p.client, "server": p.server} {
					got, err := roundTrip(s, []byte("hello from "+name))
					if err != nil || string(got) != "hello from "+name {
						t.Errorf("%s-opened stream: got %q, %v", name, got, err)
					}
				}
			})

			t.Run("identity transport rtt", func(t *testing.T) {
				p := newPair(t, tr, pairOpts{})
				if p.server.Peer() != testID {
					t.Errorf("server sees peer %v, want %v", p.server.Peer(), testID)
				}
				if p.client.Welcome().Identity != testID {
					t.Errorf("welcome says %v, want %v", p.client.Welcome().Identity, testID)
				}
				if p.server.PeerCertificate() == nil {
					t.Error("server has no peer certificate")
				}
				for _, s := range []*tunnel.Session{p.client, p.server} {
					if s.Transport() != tr {
						t.Errorf("Transport() = %q, want %q", s.Transport(), tr)
					}
				}
				serveEcho(t, p.server)
				deadline := time.Now().Add(3 * time.Second)
				for p.client.RTT() <= 0 && time.Now().Before(deadline) {
					_, _ = roundTrip(p.client, []byte("x"))
					time.Sleep(50 * time.Millisecond)
				}
				if rtt := p.client.RTT(); rtt <= 0 || rtt > time.Second {
					t.Errorf("RTT on loopback = %v, want (0, 1s]", rtt)
				}
			})

			t.Run("half close", func(t *testing.T) {
				p := newPair(t, tr, pairOpts{})
				mux := tunnel.NewServeMux()
				mux.HandleFunc("count", func(ctx context.Context, st *tunnel.Stream) {
					n, _ := io.Copy(io.Discard, st) // until the client's CloseWrite
					fmt.Fprintf(st, "read %d bytes", n)
				})
				go p.server.Serve(context.Background(), mux)
				st, err := p.client.OpenStream(context.Background(), "count", nil)
				if err != nil {
					t.Fatal(err)
				}
				defer st.Close()
				if _, err := st.Write(make([]byte, 1000)); err != nil {
					t.Fatal(err)
				}
				if err := st.CloseWrite(); err != nil {
					t.Fatal(err)
				}
				got, err := io.ReadAll(st)
				if err != nil || string(got) != "read 1000 bytes" {
					t.Fatalf("after half-close got %q, %v", got, err)
				}
			})

			t.Run("metadata", func(t *testing.T) {
				p := newPair(t, tr, pairOpts{})
				type meta struct {
					Argv []string `json:"argv"`
				}
				got := make(chan meta, 1)
				mux := tunnel.NewServeMux()
				mux.HandleFunc("meta", func(ctx context.Context, st *tunnel.Stream) {
					var m meta
					if err := st.DecodeMeta(&m); err != nil {
						_ = st.Reject(err.Error())
						return
					}
					got <- m
					_, _ = st.Write([]byte("ok"))
				})
				go p.server.Serve(context.Background(), mux)
				want := meta{Argv: []string{"bd", "show", "a b", "quote\"", "nl\n"}}
				st, err := p.client.OpenStream(context.Background(), "meta", want)
				if err != nil {
					t.Fatal(err)
				}
				defer st.Close()
				if b, err := io.ReadAll(st); err != nil || string(b) != "ok" {
					t.Fatalf("reply %q, %v", b, err)
				}
				if m := <-got; fmt.Sprint(m) != fmt.Sprint(want) {
					t.Errorf("server decoded %v, want %v", m, want)
				}
				// Unknown fields are refused, with the reason shown to the opener.
				st2, _ := p.client.OpenStream(context.Background(), "meta", map[string]any{"argv": []string{"x"}, "identity": "other/rig"})
				defer st2.Close()
				_, err = io.ReadAll(st2)
				var re *wire.RemoteError
				if !errors.As(err, &re) || !strings.Contains(re.Reason, "unknown field") {
					t.Errorf("stream with unknown metadata field: %v, want a RemoteError about the unknown field", err)
				}
			})

			t.Run("unknown kind refused", func(t *testing.T) {
				p := newPair(t, tr, pairOpts{})
				serveEcho(t, p.server)
				st, err := p.client.OpenStream(context.Background(), "bogus", nil)
				if err != nil {
					t.Fatal(err)
				}
				defer st.Close()
				_, err = st.Read(make([]byte, 1))
				var re *wire.RemoteError
				if !errors.As(err, &re) || !strings.Contains(re.Reason, `unknown stream kind "bogus"`) || !strings.Contains(re.Reason, "ping") {
					t.Fatalf("got %v, want a RemoteError naming the kind and what is served", err)
				}
			})

			t.Run("bulk transfer intact", func(t *testing.T) {
				p := newPair(t, tr, pairOpts{})
				serveEcho(t, p.server)
				data := make([]byte, 3*tunnel.DefaultConfig().StreamWindow) // three windows: flow control turns over
				_, _ = rand.Read(data)
				got, err := roundTrip(p.client, data)
				if err != nil {
					t.Fatal(err)
				}
				if sha256.Sum256(got) != sha256.Sum256(data) {
					t.Fatalf("echoed %d bytes differ from the %d sent", len(got), len(data))
				}
			})

			t.Run("read while a first write larger than the window blocks", func(t *testing.T) {
				p := newPair(t, tr, pairOpts{})
				serveEcho(t, p.server)
				st, err := p.client.OpenStream(context.Background(), wire.KindPing, nil)
				if err != nil {
					t.Fatal(err)
				}
				defer st.Close()
				window := int64(tunnel.DefaultConfig().StreamWindow)
				data := make([]byte, 2*window)
				var written atomic.Int64
				go func() {
					for b := data; len(b) > 0; b = b[min(len(b), 16<<10):] {
						n, err := st.Write(b[:min(len(b), 16<<10)])
						written.Add(int64(n))
						if err != nil {
							return
						}
					}
					_ = st.CloseWrite()
				}()
				// Reading starts once the echo has filled its buffers well past a
				// write's first chunks (QUIC's stalls near 1.9 MB, yamux's later).
				if !waitFor(20*time.Second, func() bool { return written.Load() >= window/4 }) {
					t.Fatalf("wrote %d bytes with nobody reading the echo, want %d before reading", written.Load(), window/4)
				}
				got := make(chan int, 1)
				go func() { b, _ := io.ReadAll(st); got <- len(b) }()
				select {
				case n := <-got:
					if n != len(data) {
						t.Fatalf("echoed %d bytes, want %d", n, len(data))
					}
				case <-time.After(20 * time.Second):
					t.Fatal("deadlock: the reader waits for the writer, the writer for the reader")
				}
			})

			t.Run("many concurrent streams", func(t *testing.T) {
				p := newPair(t, tr, pairOpts{})
				serveEcho(t, p.server)
				var wg sync.WaitGroup
				errs := make(chan error, 100)
				for i := range 100 {
					wg.Add(1)
					go func() {
						defer wg.Done()
						msg := bytes.Repeat([]byte{byte(i)}, 10000+i)
						got, err := roundTrip(p.client, msg)
						if err == nil && !bytes.Equal(got, msg) {
							err = fmt.Errorf("stream %d: echo differs", i)
						}
						if err != nil {
							errs <- err
						}
					}()
				}
				wg.Wait()
				close(errs)
				for err := range errs {
					t.Error(err)
				}
			})

			t.Run("local stream limit", func(t *testing.T) {
				p := newPair(t, tr, pairOpts{client: tunnel.Config{MaxStreams: 3}})
				serveEcho(t, p.server)
				var open []*tunnel.Stream
				for range 3 {
					st, err := p.client.OpenStream(context.Background(), wire.KindPing, nil)
					if err != nil {
						t.Fatal(err)
					}
					open = append(open, st)
				}
				if _, err := p.client.OpenStream(context.Background(), wire.KindPing, nil); !errors.Is(err, tunnel.ErrStreamLimit) {
					t.Fatalf("4th stream: %v, want ErrStreamLimit", err)
				}
				open[0].Close()
				st, err := p.client.OpenStream(context.Background(), wire.KindPing, nil)
				if err != nil {
					t.Fatalf("after closing one, opening failed: %v", err)
				}
				st.Close()
			})

			t.Run("peer stream limit", func(t *testing.T) {
				p := newPair(t, tr, pairOpts{server: tunnel.Config{MaxStreams: 2}, client: tunnel.Config{MaxStreams: 10}})
				hold := make(chan struct{})
				t.Cleanup(func() { close(hold) })
				mux := tunnel.NewServeMux()
				mux.HandleFunc("hold", func(ctx context.Context, st *tunnel.Stream) {
					_, _ = st.Write([]byte("k"))
					<-hold
				})
				go p.server.Serve(context.Background(), mux)
				for i := range 2 {
					st, err := p.client.OpenStream(context.Background(), "hold", nil)
					if err != nil {
						t.Fatal(err)
					}
					if _, err := st.Read(make([]byte, 1)); err != nil {
						t.Fatalf("stream %d: %v", i, err)
					}
				}
				st, err := p.client.OpenStream(context.Background(), "hold", nil)
				if err == nil {
					_, err = st.Read(make([]byte, 1))
				}
				if err == nil || !strings.Contains(err.Error(), "stream limit") {
					t.Fatalf("3rd stream over the server's limit of 2: %v, want a stream-limit error", err)
				}
			})

			t.Run("close ends streams", func(t *testing.T) {
				p := newPair(t, tr, pairOpts{})
				mux := tunnel.NewServeMux()
				mux.HandleFunc("hold", func(ctx context.Context, st *tunnel.Stream) { <-ctx.Done() })
				ctx, cancel := context.WithCancel(context.Background())
				t.Cleanup(cancel) // the handler holds its stream until then
				go p.server.Serve(ctx, mux)
				st, err := p.client.OpenStream(context.Background(), "hold", nil)
				if err != nil {
					t.Fatal(err)
				}
				_, _ = st.Write([]byte("x"))
				if !waitFor(10*time.Second, func() bool { return p.server.Streams() == 1 }) {
					t.Fatalf("server has %d streams open, want the held one", p.server.Streams())
				}
				p.server.CloseWithReason("test over")
				readErr := make(chan error, 1)
				go func() { _, err := st.Read(make([]byte, 1)); readErr <- err }()
				select {
				case err := <-readErr:
					if err == nil {
						t.Fatal("read on a closed session succeeded")
					}
				case <-time.After(3 * time.Second):
					t.Fatal("stream read still blocked 3s after the session closed")
				}
				select {
				case <-p.client.Done():
				case <-time.After(3 * time.Second):
					t.Fatal("client session not done 3s after the server closed it")
				}
				if p.client.Err() == nil {
					t.Error("Err() is nil on a done session")
				}
			})

			t.Run("serve returns once its handlers have", func(t *testing.T) {
				p := newPair(t, tr, pairOpts{})
				mux := tunnel.NewServeMux()
				handling, handled := make(chan struct{}), make(chan struct{})
				mux.HandleFunc("drain", func(_ context.Context, st *tunnel.Stream) {
					close(handling)
					_, _ = io.Copy(io.Discard, st) // until the opener closes it, whatever ctx says
					close(handled)
				})
				ctx, cancel := context.WithCancel(context.Background())
				served := make(chan error, 1)
				go func() { served <- p.server.Serve(ctx, mux) }()
				st, err := p.client.OpenStream(context.Background(), "drain", nil)
				if err != nil {
					t.Fatal(err)
				}
				_, _ = st.Write([]byte("x"))
				select {
				case <-handling:
				case <-time.After(10 * time.Second):
					t.Fatal("the stream never reached its handler")
				}
				cancel()
				select {
				case err := <-served:
					t.Fatalf("Serve returned (%v) while its handler still ran", err)
				case <-time.After(100 * time.Millisecond):
				}
				st.Close()
				select {
				case <-served:
				case <-time.After(10 * time.Second):
					t.Fatal("Serve did not return once its handler had")
				}
				select {
				case <-handled:
				default:
					t.Error("Serve returned before its handler")
				}
			})

			t.Run("dead peer noticed", func(t *testing.T) {
				cfg := tunnel.Config{KeepAlive: 200 * time.Millisecond, IdleTimeout: time.Second}
				p := newPair(t, tr, pairOpts{server: cfg, client: cfg, relay: true})
				p.relay.Cut(true)
				start := time.Now()
				for name, s := range map[string]*tunnel.Session{"client": p.client, "server": p.server} {
					select {
					case <-s.Done():
					case <-time.After(5 * time.Second):
						t.Fatalf("%s did not notice the partition within 5s", name)
					}
				}
				if d := time.Since(start); d > 3*time.Second {
					t.Errorf("partition noticed after %v, want about the 1s idle timeout", d)
				}
			})
		})
	}
}

func TestCloseWhenIdle(t *testing.T) {
	for _, transport := range transports {
		t.Run(transport, func(t *testing.T) {
			p := newPair(t, transport, pairOpts{})
			serveEcho(t, p.server)
			st, err := p.client.OpenStream(context.Background(), wire.KindPing, nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := roundTripOn(st, []byte("hold")); err != nil {
				t.Fatal(err)
			}
			p.client.CloseWhenIdle(time.Minute, "replaced")
			time.Sleep(300 * time.Millisecond)
			if p.client.Err() != nil {
				t.Fatal("closed while a stream was open")
			}
			st.Close()
			select {
			case <-p.client.Done():
			case <-time.After(5 * time.Second):
				t.Fatal("not closed once idle")
			}

			// The limit closes a session whose stream never ends.
			q := newPair(t, transport, pairOpts{})
			serveEcho(t, q.server)
			st2, err := q.client.OpenStream(context.Background(), wire.KindPing, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer st2.Close()
			if _, err := roundTripOn(st2, []byte("hold")); err != nil {
				t.Fatal(err)
			}
			q.client.CloseWhenIdle(200*time.Millisecond, "replaced")
			select {
			case <-q.client.Done():
			case <-time.After(5 * time.Second):
				t.Fatal("limit did not close a busy session")
			}
		})
	}
}

// roundTripOn writes msg on st and reads the echo back, leaving st open.
func roundTripOn(st *tunnel.Stream, msg []byte) ([]byte, error) {
	if _, err := st.Write(msg); err != nil {
		return nil, err
	}
	buf := make([]byte, len(msg))
	_, err := io.ReadFull(st, buf)
	return buf, err
}

// TestCloseReason: the side that closes says why, and the peer's Err
// carries it on both transports (QUIC in its close frame, TCP in a
// goodbye stream that no handler sees), where PeerReason finds it.
func TestCloseReason(t *testing.T) {
	for _, transport := range transports {
		t.Run(transport, func(t *testing.T) {
			p := newPair(t, transport, pairOpts{})
			served := make(chan string, 1)
			go func() {
				_ = p.server.Serve(context.Background(), tunnel.HandlerFunc(func(_ context.Context, st *tunnel.Stream) { served <- st.Kind() }))
			}()
			start := time.Now()
			if err := p.client.CloseWithReason("agent shutting down"); err != nil {
				t.Fatal(err)
			}
			if d := time.Since(start); d > time.Second {
				t.Errorf("closing took %v", d)
			}
			select {
			case <-p.server.Done():
			case <-time.After(5 * time.Second):
				t.Fatal("server session still up")
			}
			if err := p.server.Err(); err == nil || !strings.Contains(err.Error(), "agent shutting down") {
				t.Errorf("server sees %v, want the client's reason", err)
			}
			if reason, ok := tunnel.PeerReason(p.server.Err()); !ok || reason != "agent shutting down" {
				t.Errorf("PeerReason: %q, %v; want the client's reason", reason, ok)
			}
			if reason, ok := tunnel.PeerReason(p.client.Err()); ok {
				t.Errorf("PeerReason of the side that closed: %q, want none", reason)
			}
			select {
			case k := <-served:
				t.Errorf("a %s stream reached the handler", k)
			default:
			}
		})
	}
}
