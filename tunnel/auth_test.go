package tunnel_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"testing"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/polecat-sidecar/sidecar/tunnel"
	"github.com/polecat-sidecar/sidecar/tunnel/tunneltest"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// TestRefusals checks that every kind of bad client certificate is refused
// during the handshake on both transports, that the client is told, and
// that the server never yields a session for it.
func TestRefusals(t *testing.T) {
	ca := tunneltest.NewCA(t)
	other := tunneltest.NewCA(t)
	revoked := ca.Client(t, testID)
	now := time.Now()
	cases := []struct {
		name  string
		cert  tls.Certificate
		alert uint8 // what the client is told (PeerAlert)
	}{
		{"wrong CA", other.Client(t, testID), tunnel.AlertUnknownCA},
		{"expired", ca.Client(t, testID, tunneltest.Validity(now.Add(-2*time.Hour), now.Add(-time.Hour))), tunnel.AlertCertificateExpired},
		{"not yet valid", ca.Client(t, testID, tunneltest.Validity(now.Add(time.Hour), now.Add(2*time.Hour))), tunnel.AlertCertificateExpired},
		{"revoked", revoked, tunnel.AlertBadCertificate},
		{"server certificate as client certificate", ca.Server(t), tunnel.AlertBadCertificate},
		{"server usage with polecat URI", ca.Client(t, testID, tunneltest.ServerUsage), tunnel.AlertBadCertificate},
		{"no identity URI", ca.Client(t, wire.Identity{}), tunnel.AlertBadCertificate},
		{"identity with bad name", ca.Client(t, wire.Identity{Rig: "gastown", Name: "evil/../x"}), tunnel.AlertBadCertificate},
		{"no client certificate", tls.Certificate{}, 116}, // certificate_required
	}
	sc := ca.ServerConfig(ca.Server(t))
	sc.Authorize = func(id wire.Identity, leaf *x509.Certificate) error {
		if leaf.SerialNumber.Cmp(revoked.Leaf.SerialNumber) == 0 {
			return errors.New("certificate revoked")
		}
		return nil
	}
	ln, err := tunnel.Listen("127.0.0.1:0", sc)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan *tunnel.Session, 100)
	go func() {
		for {
			s, err := ln.Accept(context.Background())
			if err != nil {
				return
			}
			accepted <- s
		}
	}()
	for _, tr := range transports {
		for _, c := range cases {
			t.Run(tr+"/"+c.name, func(t *testing.T) {
				cc := ca.ClientConfig(c.cert)
				cc.Transport = tr
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				s, err := tunnel.Dial(ctx, ln.Addr(), cc)
				if err == nil {
					s.Close()
					t.Fatal("dial succeeded")
				}
				if !tunnel.IsAuthError(err) {
					t.Errorf("refusal not recognised as an auth error: %v", err)
				}
				if alert, ok := tunnel.PeerAlert(err); !ok || alert != c.alert {
					t.Errorf("PeerAlert: %d, %v; want alert %d (%v)", alert, ok, c.alert, err)
				}
			})
		}
		t.Run(tr+"/valid certificate accepted", func(t *testing.T) {
			cc := ca.ClientConfig(ca.Client(t, testID))
			cc.Transport = tr
			s, err := tunnel.Dial(context.Background(), ln.Addr(), cc)
			if err != nil {
				t.Fatal(err)
			}
			s.Close()
			select {
			case got := <-accepted:
				if got.Peer() != testID {
					t.Errorf("accepted %v", got.Peer())
				}
			case <-time.After(2 * time.Second):
				t.Fatal("server did not yield the valid session")
			}
		})
	}
	select {
	case s := <-accepted:
		t.Fatalf("server yielded a session for %v", s.Peer())
	case <-time.After(100 * time.Millisecond):
	}
}

// TestWrongALPN checks that a client offering another protocol, or none, is
// refused on both transports.
func TestWrongALPN(t *testing.T) {
	ca := tunneltest.NewCA(t)
	ln, err := tunnel.Listen("127.0.0.1:0", ca.ServerConfig(ca.Server(t)))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	cert := ca.Client(t, testID)
	for _, protos := range [][]string{{"h2"}, nil, {wire.JoinALPN}} {
		conf := &tls.Config{RootCAs: ca.Pool, ServerName: "localhost", Certificates: []tls.Certificate{cert}, NextProtos: protos, MinVersion: tls.VersionTLS13}
		t.Run("tcp", func(t *testing.T) {
			c, err := tls.Dial("tcp", ln.Addr(), conf)
			if err == nil {
				// TLS 1.3: a refusal of the client shows on the first read.
				_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
				_, err = c.Read(make([]byte, 1))
				c.Close()
			}
			if err == nil {
				t.Fatalf("ALPN %q accepted on tcp", protos)
			}
		})
		t.Run("quic", func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			qc := conf.Clone()
			if qc.NextProtos == nil {
				qc.NextProtos = []string{"x"} // quic-go requires one
			}
			c, err := quic.DialAddr(ctx, ln.Addr(), qc, nil)
			if err == nil {
				_, err = c.AcceptUniStream(ctx)
				c.CloseWithError(0, "")
			}
			if err == nil {
				t.Fatalf("ALPN %q accepted on quic", protos)
			}
		})
	}
}

// TestFallback checks that Dial ends on TCP when UDP is blocked, within
// about the fallback delay, and on QUIC again once UDP passes.
func TestFallback(t *testing.T) {
	ca := tunneltest.NewCA(t)
	ln, err := tunnel.Listen("127.0.0.1:0", ca.ServerConfig(ca.Server(t)))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			if _, err := ln.Accept(context.Background()); err != nil {
				return
			}
		}
	}()
	relay := tunneltest.NewRelay(t, ln.Addr())
	cc := ca.ClientConfig(ca.Client(t, testID))

	relay.BlockUDP(true)
	start := time.Now()
	s, err := tunnel.Dial(context.Background(), relay.Addr, cc)
	if err != nil {
		t.Fatal(err)
	}
	if s.Transport() != tunnel.TransportTCP {
		t.Errorf("with UDP blocked: transport %s, want tcp", s.Transport())
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("fallback took %v, want about the 2s fallback delay", d)
	}
	s.Close()

	relay.BlockUDP(false)
	s, err = tunnel.Dial(context.Background(), relay.Addr, cc)
	if err != nil {
		t.Fatal(err)
	}
	if s.Transport() != tunnel.TransportQUIC {
		t.Errorf("with UDP open: transport %s, want quic", s.Transport())
	}
	s.Close()

	// A refusal on QUIC is final: no fallback to TCP, and no 2s wait.
	bad := ca.ClientConfig(ca.Client(t, testID, tunneltest.Validity(time.Now().Add(-2*time.Hour), time.Now().Add(-time.Hour))))
	start = time.Now()
	if _, err := tunnel.Dial(context.Background(), relay.Addr, bad); err == nil || !tunnel.IsAuthError(err) {
		t.Fatalf("expired certificate: %v, want an auth error", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("auth refusal took %v; it should not wait for the TCP fallback", d)
	}
}
