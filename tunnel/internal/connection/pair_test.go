package connection_test

import (
	"context"
	"crypto/tls"
	"net"
	"testing"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/polecat-sidecar/sidecar/tunnel/internal/connection"
	"github.com/polecat-sidecar/sidecar/tunnel/tunneltest"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

var (
	testID     = wire.Identity{Rig: "gastown", Name: "furiosa"}
	transports = []string{connection.NameQUIC, connection.NameTCP}
	cfg        = connection.Config{
		HandshakeTimeout: 5 * time.Second,
		KeepAlive:        time.Second,
		IdleTimeout:      10 * time.Second,
		MaxStreams:       16,
		StreamWindow:     1 << 20,
		ConnWindow:       4 << 20,
	}
)

// conn is what package tunnel's transport interface asks of QUIC and TCP.
type conn interface {
	Open(ctx context.Context) (connection.Stream, error)
	Accept(ctx context.Context) (connection.Stream, error)
	Close(reason string) error
	Done() <-chan struct{}
	Err() error
	RTT() time.Duration
	LocalAddr() net.Addr
	RemoteAddr() net.Addr
	Name() string
}

// server accepts one connection of transport on loopback, authorizing
// clients of ca, and welcomes it; it returns the address to dial and the
// accepted connection (or the error) once a client has dialled.
func server(t *testing.T, transport string, ca *tunneltest.CA) (string, <-chan conn, <-chan error) {
	t.Helper()
	cert := ca.Server(t)
	getCert := func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return &cert, nil }
	conf := connection.ServerTLS(getCert, ca.Pool, func(tls.ConnectionState) error { return nil })
	conns, errs := make(chan conn, 1), make(chan error, 1)
	welcome := wire.Welcome{Identity: testID, ServerVersion: "test"}
	if transport == connection.NameQUIC {
		ln, err := quic.ListenAddr("127.0.0.1:0", conf, cfg.QUIC())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		go func() {
			qc, err := ln.Accept(context.Background())
			if err == nil {
				var c *connection.QUIC
				if c, err = connection.WelcomeQUIC(qc, welcome); err == nil {
					conns <- c
					return
				}
			}
			errs <- err
		}()
		return ln.Addr().String(), conns, errs
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		raw, err := ln.Accept()
		if err == nil {
			var tc *tls.Conn
			if tc, err = connection.HandshakeTCP(raw, connection.TCPTLS(conf, getCert), cfg); err == nil {
				var c *connection.TCP
				if c, err = connection.WelcomeTCP(tc, welcome, cfg); err == nil {
					conns <- c
					return
				}
			}
		}
		errs <- err
	}()
	return ln.Addr().String(), conns, errs
}

// dial connects to addr over transport with a certificate of ca's.
func dial(ctx context.Context, t *testing.T, transport, addr string, ca *tunneltest.CA) (conn, wire.Welcome, error) {
	cert := ca.Client(t, testID)
	conf := connection.ClientTLS(func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &cert, nil }, ca.Pool, "localhost")
	var c conn
	var wel wire.Welcome
	var err error
	if transport == connection.NameQUIC {
		c, wel, err = connection.DialQUIC(ctx, addr, conf, cfg)
	} else {
		c, wel, err = connection.DialTCP(ctx, addr, conf, cfg)
	}
	if err != nil {
		return nil, wel, err // not a nil *QUIC or *TCP in c
	}
	return c, wel, nil
}

// pair is an established client and server connection of transport.
func pair(t *testing.T, transport string) (client, srv conn) {
	t.Helper()
	ca := tunneltest.NewCA(t)
	addr, conns, errs := server(t, transport, ca)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	client, wel, err := dial(ctx, t, transport, addr, ca)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { client.Close("test over") })
	if wel.Identity != testID || wel.ServerVersion != "test" {
		t.Errorf("welcome %+v", wel)
	}
	select {
	case srv = <-conns:
	case err := <-errs:
		t.Fatalf("accept: %v", err)
	}
	t.Cleanup(func() { srv.Close("test over") })
	return client, srv
}
