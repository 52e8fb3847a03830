package tunnel_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"time"

	"github.com/polecat-sidecar/sidecar/tunnel"
	"github.com/polecat-sidecar/sidecar/tunnel/tunneltest"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// panicT lets the examples use tunneltest's certificates outside a test.
type panicT struct{}

func (panicT) Helper()                           {}
func (panicT) Fatalf(format string, args ...any) { log.Panicf(format, args...) }

// Listen accepts tunnels on one port, QUIC on UDP and TLS+yamux on TCP.
// Here the server serves "ping" streams by echoing them.
func ExampleListen() {
	ca, ln := listen(false)
	defer ln.Close()
	go serve(ln)

	client := dial(ca, ln.Addr())
	defer client.Close()
	fmt.Println("server says we are", client.Welcome().Identity)
	// Output: server says we are gastown/furiosa
}

// listen starts a server on loopback with a new test CA.
func listen(tcpOnly bool) (*tunneltest.CA, *tunnel.Listener) {
	ca := tunneltest.NewCA(panicT{})
	sc := ca.ServerConfig(ca.Server(panicT{}))
	sc.Logger = slog.New(slog.DiscardHandler)
	sc.DisableQUIC = tcpOnly
	ln, err := tunnel.Listen("127.0.0.1:0", sc)
	if err != nil {
		log.Fatal(err)
	}
	return ca, ln
}

// serve accepts sessions and echoes their ping streams.
func serve(ln *tunnel.Listener) {
	mux := tunnel.NewServeMux()
	mux.HandleFunc(wire.KindPing, func(_ context.Context, st *tunnel.Stream) {
		_, _ = io.Copy(st, st)
		_ = st.CloseWrite()
	})
	for {
		sess, err := ln.Accept(context.Background())
		if err != nil {
			return
		}
		go func() { _ = sess.Serve(context.Background(), mux) }()
	}
}

// dial connects to addr as gastown/furiosa with a certificate from ca.
func dial(ca *tunneltest.CA, addr string) *tunnel.Session {
	cc := ca.ClientConfig(ca.Client(panicT{}, wire.Identity{Rig: "gastown", Name: "furiosa"}))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sess, err := tunnel.Dial(ctx, addr, cc)
	if err != nil {
		log.Fatal(err)
	}
	return sess
}

// Dial connects with QUIC, falling back to TCP when UDP is blocked; the
// session is used the same way on both.
func ExampleDial() {
	ca, ln := listen(true) // TCP only, as if UDP were blocked
	defer ln.Close()
	go serve(ln)

	client := dial(ca, ln.Addr())
	defer client.Close()
	fmt.Println("transport:", client.Transport())
	// Output: transport: tcp
}

// OpenStream opens a stream of a kind with optional JSON metadata; its
// header leaves with the first write, so a request costs no extra round
// trip.
func ExampleSession_OpenStream() {
	ca, ln := listen(false)
	defer ln.Close()
	go serve(ln)
	client := dial(ca, ln.Addr())
	defer client.Close()

	st, err := client.OpenStream(context.Background(), wire.KindPing, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()
	_, _ = st.Write([]byte("hello"))
	_ = st.CloseWrite()
	echo, err := io.ReadAll(st)
	fmt.Printf("%s %v\n", echo, err)

	// A kind the other side does not serve is refused with the reason.
	bad, _ := client.OpenStream(context.Background(), "bogus", nil)
	defer bad.Close()
	_, err = bad.Read(make([]byte, 1))
	fmt.Println(err)
	// Output:
	// hello <nil>
	// wire: bogus stream refused by peer: unknown stream kind "bogus" (this side serves: ping)
}

// AcceptStream takes streams one at a time (Serve does it for a ServeMux);
// the stream's kind and metadata say what it is for, and the session says
// who opened it.
func ExampleSession_AcceptStream() {
	ca, ln := listen(false)
	defer ln.Close()
	client := dial(ca, ln.Addr())
	defer client.Close()
	server, err := ln.Accept(context.Background())
	if err != nil {
		log.Fatal(err)
	}

	st, err := client.OpenStream(context.Background(), "greeting", map[string]string{"lang": "en"})
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()
	_, _ = st.Write([]byte("hi"))

	in, err := server.AcceptStream(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	defer in.Close()
	var meta struct{ Lang string }
	_ = in.DecodeMeta(&meta)
	buf := make([]byte, 2)
	_, _ = io.ReadFull(in, buf)
	fmt.Println(in.Kind(), meta.Lang, string(buf), "from", server.Peer())
	// Output: greeting en hi from gastown/furiosa
}
