package connection_test

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/polecat-sidecar/sidecar/tunnel/internal/connection"
	"github.com/polecat-sidecar/sidecar/tunnel/tunneltest"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// TestIsAuthError: a certificate refused on either side is an auth error
// on both transports; a port nobody answers on is not.
func TestIsAuthError(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			ca, stranger := tunneltest.NewCA(t), tunneltest.NewCA(t)
			for _, tc := range []struct {
				name   string
				client *tunneltest.CA // issues the client's certificate and checks the server's
				auth   bool
			}{
				{"same CA", ca, false},
				{"unknown CA", stranger, true},
			} {
				addr, _, _ := server(t, tr, ca)
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				c, _, err := dial(ctx, t, tr, addr, tc.client)
				cancel()
				if c != nil {
					c.Close("test over")
				}
				if (err != nil) != tc.auth || connection.IsAuthError(err) != tc.auth {
					t.Errorf("%s: dial error %v, IsAuthError %v; want an auth error: %v", tc.name, err, connection.IsAuthError(err), tc.auth)
				}
			}
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			addr := ln.Addr().String()
			ln.Close()
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			if _, _, err := dial(ctx, t, tr, addr, ca); err == nil || connection.IsAuthError(err) {
				t.Errorf("nobody listening: %v, IsAuthError %v", err, connection.IsAuthError(err))
			}
		})
	}
	if connection.IsAuthError(errors.New("other")) || connection.IsAuthError(nil) {
		t.Error("an unrelated error is an auth error")
	}
}

// TestTCPTLSJoin: on the TCP port, a client that asks for the join ALPN
// alone completes its handshake without a certificate, and one that asks
// for the tunnel without a certificate is refused.
func TestTCPTLSJoin(t *testing.T) {
	ca := tunneltest.NewCA(t)
	cert := ca.Server(t)
	getCert := func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return &cert, nil }
	conf := connection.TCPTLS(connection.ServerTLS(getCert, ca.Pool, func(tls.ConnectionState) error { return nil }), getCert)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	for _, tc := range []struct {
		alpn string
		ok   bool
	}{
		{wire.JoinALPN, true},
		{wire.ALPN, false},
	} {
		got := make(chan error, 1)
		go func() {
			raw, err := ln.Accept()
			if err == nil {
				var c *tls.Conn
				if c, err = connection.HandshakeTCP(raw, conf, cfg); err == nil {
					if p := c.ConnectionState().NegotiatedProtocol; p != tc.alpn {
						err = errors.New("negotiated " + p)
					}
					c.Close()
				}
			}
			got <- err
		}()
		c, err := tls.Dial("tcp", ln.Addr().String(), &tls.Config{RootCAs: ca.Pool, ServerName: "localhost", NextProtos: []string{tc.alpn}})
		if err == nil {
			_, err = c.Read(make([]byte, 1)) // a refusal arrives after the client's Finished
			c.Close()
		}
		if serr := <-got; (serr == nil) != tc.ok {
			t.Errorf("%s without a certificate: server %v (client %v); want accepted: %v", tc.alpn, serr, err, tc.ok)
		}
	}
}
