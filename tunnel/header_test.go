package tunnel_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/polecat-sidecar/sidecar/tunnel"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// headerTimeout is the acceptor's handshake timeout in these tests: an
// opener "slower" than it waits three times as long.
const headerTimeout = 500 * time.Millisecond

// TestSlowHeaderWaitedFor: an opener's header goes out with its first
// write, which may come long after the acceptor has the stream (yamux
// delivers it on opening; QUIC as soon as a later stream's data arrives,
// as in TestSession's many concurrent streams on a loaded machine; an
// agent forwarding a connection writes when its local client speaks). The
// acceptor used to give a stream the handshake timeout from its arrival and
// then reset it with code 0, no reason given: "stream N canceled by remote
// with error code 0". Now it waits for the header's first byte as long as
// the session lasts.
func TestSlowHeaderWaitedFor(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			p := newPair(t, tr, pairOpts{server: tunnel.Config{HandshakeTimeout: headerTimeout}})
			serveEcho(t, p.server)
			slow, err := p.client.OpenStream(context.Background(), wire.KindPing, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer slow.Close()
			// A later stream's data delivers the slow one too, on QUIC.
			if got, err := roundTrip(p.client, []byte("later")); err != nil || string(got) != "later" {
				t.Fatalf("later stream: %q, %v", got, err)
			}
			if !waitFor(5*time.Second, func() bool { return p.server.Streams() == 1 }) {
				t.Fatalf("server has %d streams open, want the slow one", p.server.Streams())
			}
			time.Sleep(3 * headerTimeout) // the opener takes its time
			msg := []byte("at last")
			go func() {
				_, _ = slow.Write(msg)
				_ = slow.CloseWrite()
			}()
			got, err := io.ReadAll(slow)
			if err != nil || !bytes.Equal(got, msg) {
				t.Fatalf("slow opener's stream echoed %q, %v; want %q", got, err, msg)
			}
		})
	}
}

// TestIncompleteHeaderRefused: once a header's first byte has come, the
// rest travels with it, so a header still incomplete after the handshake
// timeout is refused, with a reason saying so (it used to be "accepted"
// and closed).
func TestIncompleteHeaderRefused(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			p := newPair(t, tr, pairOpts{server: tunnel.Config{HandshakeTimeout: headerTimeout}})
			serveEcho(t, p.server)
			raw, err := tunnel.OpenRawStream(context.Background(), p.client)
			if err != nil {
				t.Fatal(err)
			}
			defer raw.Close()
			if _, err := raw.Write([]byte{wire.HeaderVersion}); err != nil {
				t.Fatal(err)
			}
			_ = raw.SetReadDeadline(time.Now().Add(10 * time.Second))
			err = wire.ReadVerdict(raw, wire.KindPing)
			var re *wire.RemoteError
			if !errors.As(err, &re) || !strings.Contains(re.Reason, "stream header incomplete "+headerTimeout.String()) {
				t.Fatalf("verdict on a header stalled after its first byte: %v, want a refusal naming the timeout", err)
			}
		})
	}
}

// TestAcceptStreamHeaderWaitEndsWithContext: AcceptStream waits for a
// silent stream's header only as long as its context lets it.
func TestAcceptStreamHeaderWaitEndsWithContext(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			p := newPair(t, tr, pairOpts{})
			silent, err := p.client.OpenStream(context.Background(), wire.KindPing, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer silent.Close()
			later, err := p.client.OpenStream(context.Background(), wire.KindPing, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer later.Close()
			if _, err := later.Write([]byte("x")); err != nil { // delivers the silent one too, on QUIC
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			st, err := p.server.AcceptStream(ctx)
			if err == nil {
				st.Close()
				t.Fatalf("accepted a %s stream whose opener sent nothing", st.Kind())
			}
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("AcceptStream on a silent stream: %v, want the context's deadline", err)
			}
		})
	}
}

// TestHeaderLeadsConcurrentWrites: a Read sends the header when nothing
// else has yet. A Write racing it used to send its bytes at once, ahead of
// a header whose write had not happened yet, and a CloseWrite after it
// closed the stream under that write: "stream closed" (TestSession's many
// concurrent streams on TCP, on a loaded machine). A Write now waits for
// the header to be out.
func TestHeaderLeadsConcurrentWrites(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			p := newPair(t, tr, pairOpts{})
			serveEcho(t, p.server)
			st, err := p.client.OpenStream(context.Background(), wire.KindPing, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			sendingHeader := tunnel.DelayFirstWrite(st, 300*time.Millisecond)
			type echo struct {
				b   []byte
				err error
			}
			got := make(chan echo, 1)
			go func() {
				b, err := io.ReadAll(st)
				got <- echo{b, err}
			}()
			<-sendingHeader // the Read is sending the header, slowly
			msg := []byte("after the header")
			if _, err := st.Write(msg); err != nil {
				t.Fatal(err)
			}
			if err := st.CloseWrite(); err != nil {
				t.Fatal(err)
			}
			select {
			case e := <-got:
				if e.err != nil || !bytes.Equal(e.b, msg) {
					t.Fatalf("echoed %q, %v; want %q", e.b, e.err, msg)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("no echo within 10 s")
			}
		})
	}
}
