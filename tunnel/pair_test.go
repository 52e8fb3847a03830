package tunnel_test

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/polecat-sidecar/sidecar/tunnel"
	"github.com/polecat-sidecar/sidecar/tunnel/tunneltest"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

var testID = wire.Identity{Rig: "gastown", Name: "furiosa"}

var transports = []string{tunnel.TransportQUIC, tunnel.TransportTCP}

// pair is an established client and server session on loopback.
type pair struct {
	client, server *tunnel.Session
	ln             *tunnel.Listener
	relay          *tunneltest.Relay
}

type pairOpts struct {
	server, client tunnel.Config
	relay          bool
}

func newPair(t *testing.T, transport string, o pairOpts) *pair {
	t.Helper()
	ca := tunneltest.NewCA(t)
	sc := ca.ServerConfig(ca.Server(t))
	sc.Config = o.server
	ln, err := tunnel.Listen("127.0.0.1:0", sc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	p := &pair{ln: ln}
	addr := ln.Addr()
	if o.relay {
		p.relay = tunneltest.NewRelay(t, addr)
		addr = p.relay.Addr
	}
	cc := ca.ClientConfig(ca.Client(t, testID))
	cc.Transport, cc.Config = transport, o.client
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p.client, err = tunnel.Dial(ctx, addr, cc)
	if err != nil {
		t.Fatalf("dial %s: %v", transport, err)
	}
	t.Cleanup(func() { p.client.Close() })
	p.server, err = ln.Accept(ctx)
	if err != nil {
		t.Fatalf("accept: %v", err)
	}
	t.Cleanup(func() { p.server.Close() })
	return p
}

// echo serves KindPing streams by copying input back until EOF.
func echo(ctx context.Context, st *tunnel.Stream) {
	_, _ = io.Copy(st, st)
	_ = st.CloseWrite()
}

func serveEcho(t *testing.T, s *tunnel.Session) {
	mux := tunnel.NewServeMux()
	mux.HandleFunc(wire.KindPing, echo)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go s.Serve(ctx, mux)
}

// roundTrip opens a ping stream on s, sends msg, half-closes and returns
// what came back.
func roundTrip(s *tunnel.Session, msg []byte) ([]byte, error) {
	st, err := s.OpenStream(context.Background(), wire.KindPing, nil)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	go func() {
		_, _ = st.Write(msg)
		_ = st.CloseWrite()
	}()
	return io.ReadAll(st)
}
