package tunneltest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/polecat-sidecar/sidecar/tunnel"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// Pair dials a real tunnel on loopback, as id with a certificate of a
// fresh CA, and returns both ends; each is closed when the test ends.
func Pair(t testing.TB, id wire.Identity) (client, server *tunnel.Session) {
	t.Helper()
	ca := NewCA(t)
	ln, err := tunnel.Listen("127.0.0.1:0", ca.ServerConfig(ca.Server(t)))
	if err != nil {
		t.Fatalf("listening for a test tunnel: %v", err)
	}
	t.Cleanup(func() { ln.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	client, err = tunnel.Dial(ctx, ln.Addr(), ca.ClientConfig(ca.Client(t, id)))
	if err != nil {
		t.Fatalf("dialling a test tunnel: %v", err)
	}
	t.Cleanup(func() { client.Close() })
	server, err = ln.Accept(ctx)
	if err != nil {
		t.Fatalf("accepting a test tunnel: %v", err)
	}
	t.Cleanup(func() { server.Close() })
	return client, server
}

// Serve serves the streams the peer opens on s with h until the test ends.
func Serve(t testing.TB, s *tunnel.Session, h tunnel.Handler) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() { _ = s.Serve(ctx, h) }()
}

// Fixed is a tunnel.Sessions that always gives S, or, when S is nil, waits
// for ctx (a tunnel that is down and stays down).
type Fixed struct{ S *tunnel.Session }

// Session gives f.S, or waits for ctx when there is none.
func (f Fixed) Session(ctx context.Context) (*tunnel.Session, error) {
	if f.S == nil {
		<-ctx.Done()
		return nil, fmt.Errorf("no test tunnel: %w", ctx.Err())
	}
	return f.S, nil
}
