package forward

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/polecat-sidecar/sidecar/tunnel"
	"github.com/polecat-sidecar/sidecar/tunnel/tunneltest"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

var furiosa = wire.Identity{Rig: "gastown", Name: "furiosa"}

// host is hostd's end of a real tunnel: it answers each git stream with
// what the stream carried, upper-cased, once the stream's writer is done.
type host struct {
	streams atomic.Int32
	got     chan string // each stream's whole input
}

func (h *host) ServeStream(_ context.Context, st *tunnel.Stream) {
	h.streams.Add(1)
	b, _ := io.ReadAll(st)
	h.got <- string(b)
	_, _ = st.Write(bytes.ToUpper(b))
	_ = st.CloseWrite()
}

// listen is a unix listener in a fresh directory.
func listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("unix", filepath.Join(t.TempDir(), "s"))
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

// serve runs f on a new listener until the test ends and returns the
// listener's address.
func serve(t *testing.T, f *Forwarder) string {
	t.Helper()
	ln := listen(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve after its context ended: %v", err)
		}
	})
	return ln.Addr().String()
}

// exchange connects to addr, sends msg, half-closes and reads to the end.
func exchange(t *testing.T, addr, msg string) string {
	t.Helper()
	c, err := net.Dial("unix", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	// A forwarder that refuses answers at once and closes, maybe before
	// msg is written: what it said is read all the same.
	_, _ = c.Write([]byte(msg))
	_ = c.(*net.UnixConn).CloseWrite()
	b, _ := io.ReadAll(c)
	return string(b)
}

func TestForward(t *testing.T) {
	quiet := slog.New(slog.DiscardHandler)
	tests := []struct {
		name    string
		down    bool // no tunnel comes
		closed  bool // the tunnel is there but closed
		admit   error
		want    string // what the local client reads
		streams int32  // streams the host saw
		host    string // what the host received
	}{
		{"forwarded", false, false, nil, "[attached]HELLO[GONE]", 1, "hello[gone]"},
		{"tunnel down", true, false, nil, "[unavailable: the tunnel to hostd is down and did not come back within 100ms (gt-agent keeps retrying; see its log)]", 0, ""},
		{"stream refused", false, true, nil, "[unavailable: could not open a stream to hostd: ", 0, ""},
		{"not admitted", false, false, errors.New("wrong peer"), "", 0, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			client, server := tunneltest.Pair(t, furiosa)
			h := &host{got: make(chan string, 1)}
			mux := tunnel.NewServeMux()
			mux.Handle(wire.KindGit, h)
			tunneltest.Serve(t, server, mux)
			sessions := tunneltest.Fixed{S: client}
			if tc.down {
				sessions.S = nil
			}
			if tc.closed {
				client.Close()
			}
			f := &Forwarder{
				Kind: wire.KindGit, Wait: 100 * time.Millisecond, Sessions: sessions, Logger: quiet,
				Attached: func(c net.Conn) error { _, err := c.Write([]byte("[attached]")); return err },
				Unavailable: func(c net.Conn, reason string) {
					_, _ = c.Write([]byte("[unavailable: " + reason + "]"))
				},
				Gone:  func(st io.Writer) { _, _ = st.Write([]byte("[gone]")) },
				Admit: func(net.Conn) error { return tc.admit },
			}
			got := exchange(t, serve(t, f), "hello")
			if !strings.HasPrefix(got, tc.want) || (tc.want == "" && got != "") {
				t.Errorf("local client read %q, want %q", got, tc.want)
			}
			if tc.host != "" {
				if h := <-h.got; h != tc.host {
					t.Errorf("host received %q, want %q", h, tc.host)
				}
			}
			if n := h.streams.Load(); n != tc.streams {
				t.Errorf("host saw %d streams, want %d", n, tc.streams)
			}
		})
	}
}

// TestForwardClientGone: a local client that goes away mid-stream ends the
// stream, so the host stops what it was doing for it.
func TestForwardClientGone(t *testing.T) {
	client, server := tunneltest.Pair(t, furiosa)
	ended := make(chan error, 1)
	mux := tunnel.NewServeMux()
	mux.HandleFunc(wire.KindGit, func(_ context.Context, st *tunnel.Stream) {
		_, _ = st.Write([]byte("working"))
		_, err := io.ReadAll(st)
		ended <- err
	})
	tunneltest.Serve(t, server, mux)
	addr := serve(t, &Forwarder{Kind: wire.KindGit, Sessions: tunneltest.Fixed{S: client}, Unavailable: func(net.Conn, string) {}, Logger: slog.New(slog.DiscardHandler)})
	c, err := net.Dial("unix", addr)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write([]byte("start")); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(c, make([]byte, len("working"))); err != nil {
		t.Fatal(err)
	}
	c.Close()
	select {
	case err := <-ended:
		if err != nil {
			t.Errorf("host's stream ended with %v, want a clean end", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the host's stream outlived the local client")
	}
}

// TestServeListenerClosed: Serve ends with an error when its listener is
// closed under it, and with nil when its context ends (serve's cleanup).
func TestServeListenerClosed(t *testing.T) {
	ln := listen(t)
	done := make(chan error, 1)
	go func() { done <- (&Forwarder{Kind: wire.KindGit}).Serve(context.Background(), ln) }()
	ln.Close()
	select {
	case err := <-done:
		if !errors.Is(err, net.ErrClosed) {
			t.Errorf("Serve: %v, want net.ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not end when its listener closed")
	}
}
