package supervisor

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"io"
	"log/slog"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/polecat-sidecar/sidecar/agent/creds"
	"github.com/polecat-sidecar/sidecar/tunnel"
	"github.com/polecat-sidecar/sidecar/tunnel/tunneltest"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"

	"github.com/polecat-sidecar/sidecar/internal/settings/settingstest"
)

var furiosa = wire.Identity{Rig: "gastown", Name: "furiosa"}

// write writes cert, its key and ca's certificate to files as the agent
// keeps them.
func write(t *testing.T, ca *tunneltest.CA, cert tls.Certificate) creds.Paths {
	t.Helper()
	dir := t.TempDir()
	p := creds.Paths{Cert: filepath.Join(dir, "client.crt"), Key: filepath.Join(dir, "client.key"), CA: filepath.Join(dir, "ca.crt")}
	keyDER, err := x509.MarshalPKCS8PrivateKey(cert.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	for path, b := range map[string][]byte{
		p.Cert: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Certificate[0]}),
		p.Key:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}),
		p.CA:   pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Cert.Raw}),
	} {
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

// loaded is the store at p, loaded from its files as the agent does.
func loaded(t *testing.T, p creds.Paths) *creds.Store {
	t.Helper()
	s, err := creds.Load(p)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// hostd is a tunnel listener on loopback whose sessions it hands to the
// test, serving renewals with a certificate of its CA when renew is set.
// Once revoked is set, it refuses every certificate in the handshake, as
// hostd's revocation check does.
type hostd struct {
	ca       *tunneltest.CA
	addr     string
	sessions chan *tunnel.Session
	revoked  atomic.Bool
}

func newHostd(t *testing.T, renew bool) *hostd {
	t.Helper()
	return newHostdAt(t, renew, time.Now)
}

// newHostdAt is newHostd with a clock of its own, which its welcome
// reports and its renewals are dated by.
func newHostdAt(t *testing.T, renew bool, now func() time.Time) *hostd {
	t.Helper()
	ca := tunneltest.NewCA(t)
	h := &hostd{ca: ca, sessions: make(chan *tunnel.Session, 8)}
	sc := ca.ServerConfig(ca.Server(t))
	sc.Now = now
	sc.Authorize = func(wire.Identity, *x509.Certificate) error {
		if h.revoked.Load() {
			return errors.New("certificate revoked")
		}
		return nil
	}
	sc.Logger = slog.New(slog.DiscardHandler)
	ln, err := tunnel.Listen("127.0.0.1:0", sc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); ln.Close() })
	h.addr = ln.Addr()
	mux := tunnel.NewServeMux()
	mux.HandleFunc(wire.KindCert, func(_ context.Context, st *tunnel.Stream) {
		if !renew {
			_ = st.Reject("no renewals here")
			return
		}
		der, _ := io.ReadAll(st)
		csr, err := x509.ParseCertificateRequest(der)
		if err != nil {
			_ = st.Reject(err.Error())
			return
		}
		serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
		tmpl := &x509.Certificate{
			SerialNumber: serial, URIs: st.Session().PeerCertificate().URIs,
			NotBefore: now().Add(-time.Minute), NotAfter: now().Add(time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		}
		cert, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, csr.PublicKey, ca.Key)
		if err != nil {
			_ = st.Reject(err.Error())
			return
		}
		_, _ = st.Write(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert}))
	})
	go func() {
		for {
			sess, err := ln.Accept(ctx)
			if err != nil {
				return
			}
			t.Cleanup(func() { sess.Close() })
			go func() { _ = sess.Serve(ctx, mux) }()
			h.sessions <- sess
		}
	}()
	return h
}

// accepted is the next session hostd accepts.
func (h *hostd) accepted(t *testing.T) *tunnel.Session {
	t.Helper()
	select {
	case s := <-h.sessions:
		return s
	case <-time.After(10 * time.Second):
		t.Fatal("the agent never connected")
		return nil
	}
}

// start runs a supervisor with cfg, filled in for a test, until the test
// ends; its Run's result arrives on the channel returned.
func start(t *testing.T, cfg Config) (*Supervisor, <-chan error) {
	t.Helper()
	cfg.ServerName = "localhost"
	cfg.MinBackoff, cfg.MaxBackoff = 20*time.Millisecond, 100*time.Millisecond
	cfg.Logger = slog.New(slog.DiscardHandler)
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done, ended := make(chan error, 1), make(chan struct{})
	go func() { done <- s.Run(ctx); close(ended) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-ended:
		case <-time.After(10 * time.Second):
			t.Error("Run did not end with its context")
		}
	})
	return s, done
}

func session(t *testing.T, s *Supervisor) *tunnel.Session {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sess, err := s.Session(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return sess
}

// TestReconnect: the supervisor connects, serves the streams hostd opens
// with its Handler, and connects again when the tunnel is lost; Session
// gives the new session.
func TestReconnect(t *testing.T) {
	tests := []struct {
		transport string
	}{
		{tunnel.TransportQUIC},
		{tunnel.TransportTCP},
	}
	for _, tc := range tests {
		t.Run(tc.transport, func(t *testing.T) {
			h := newHostd(t, false)
			mux := tunnel.NewServeMux()
			mux.HandleFunc(wire.KindPing, func(_ context.Context, st *tunnel.Stream) {
				_, _ = io.Copy(st, st)
				_ = st.CloseWrite()
			})
			s, _ := start(t, Config{Addr: h.addr, Creds: loaded(t, write(t, h.ca, h.ca.Client(t, furiosa))), Transport: tc.transport, Handler: mux})
			first := h.accepted(t)
			if got := session(t, s); got.Transport() != tc.transport {
				t.Fatalf("session on %s, want %s", got.Transport(), tc.transport)
			}
			if first.Peer() != furiosa {
				t.Errorf("hostd sees %v, want furiosa", first.Peer())
			}
			if err := ping(first); err != nil {
				t.Errorf("a stream hostd opened was not served: %v", err)
			}
			old := session(t, s)
			_ = first.CloseWithReason("hostd restarting")
			second := h.accepted(t)
			if err := ping(second); err != nil {
				t.Errorf("a stream hostd opened on the new tunnel was not served: %v", err)
			}
			if got := session(t, s); got == old || got.Err() != nil {
				t.Error("Session still gives the lost session")
			}
		})
	}
}

// ping sends a ping stream on s and checks it comes back.
func ping(s *tunnel.Session) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st, err := s.OpenStream(ctx, wire.KindPing, nil)
	if err != nil {
		return err
	}
	defer st.Close()
	_, _ = st.Write([]byte("ping"))
	_ = st.CloseWrite()
	b, err := io.ReadAll(st)
	if err == nil && string(b) != "ping" {
		err = errors.New("echoed " + string(b))
	}
	return err
}

// TestFatal: a handshake hostd refuses, and a hostd never reached within
// ConnectTimeout, end Run with a *FatalError that says so.
func TestFatal(t *testing.T) {
	tests := []struct {
		name string
		cfg  func(t *testing.T) Config
		want string
	}{
		{"certificate of another CA", func(t *testing.T) Config {
			h, other := newHostd(t, false), tunneltest.NewCA(t)
			return Config{Addr: h.addr, Creds: loaded(t, write(t, other, other.Client(t, furiosa))), Transport: tunnel.TransportTCP}
		}, "is not the hostd this agent's CA (GT_PROXY_CA) vouches for"},
		{"nothing listening", func(t *testing.T) Config {
			ca := tunneltest.NewCA(t)
			return Config{Addr: tunneltest.FreeAddr(t), Creds: loaded(t, write(t, ca, ca.Client(t, furiosa))), Transport: tunnel.TransportTCP, ConnectTimeout: 300 * time.Millisecond}
		}, "cannot reach hostd at"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, done := start(t, tc.cfg(t))
			select {
			case err := <-done:
				if _, ok := errors.AsType[*FatalError](err); !ok || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("Run: %v, want a *FatalError saying %q", err, tc.want)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("Run kept retrying")
			}
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			defer cancel()
			if _, err := s.Session(ctx); !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "no tunnel to hostd at") {
				t.Errorf("Session with no tunnel: %v", err)
			}
		})
	}
}

// TestRefusal: an agent hostd refuses for good ends Run with a
// *FatalError marked Refused that names the revocation, whether hostd
// closed its tunnel saying so and then refused it, or refused it from the
// start; on both transports. A hostd never reached is not a refusal.
func TestRefusal(t *testing.T) {
	tests := []struct {
		name      string
		connected bool // the agent is connected when hostd revokes it
		want      []string
	}{
		{"revoked while connected", true, []string{"revoked this polecat's certificate (serial", `closed the tunnel saying "certificate revoked"`, "hostd token create gastown/furiosa"}},
		{"revoked before it started", false, []string{"refused this polecat's certificate (serial", "it has been revoked", "hostd token create gastown/furiosa"}},
	}
	for _, transport := range []string{tunnel.TransportQUIC, tunnel.TransportTCP} {
		for _, tc := range tests {
			t.Run(transport+"/"+tc.name, func(t *testing.T) {
				h := newHostd(t, false)
				h.revoked.Store(!tc.connected)
				s, done := start(t, Config{Addr: h.addr, Creds: loaded(t, write(t, h.ca, h.ca.Client(t, furiosa))), Transport: transport})
				if tc.connected {
					sess := h.accepted(t)
					session(t, s) // the agent has its session, welcome and all
					h.revoked.Store(true)
					_ = sess.CloseWithReason(wire.CloseRevoked)
				}
				select {
				case err := <-done:
					fatal, ok := errors.AsType[*FatalError](err)
					if !ok || !fatal.Refused {
						t.Fatalf("Run: %#v, want a refused *FatalError", err)
					}
					for _, w := range tc.want {
						if !strings.Contains(err.Error(), w) {
							t.Errorf("Run: %v\nwant it to say %q", err, w)
						}
					}
				case <-time.After(10 * time.Second):
					t.Fatal("Run kept retrying")
				}
			})
		}
	}
	t.Run("unreachable", func(t *testing.T) {
		ca := tunneltest.NewCA(t)
		_, done := start(t, Config{Addr: tunneltest.FreeAddr(t), Creds: loaded(t, write(t, ca, ca.Client(t, furiosa))), Transport: tunnel.TransportTCP, ConnectTimeout: 300 * time.Millisecond})
		if fatal, ok := errors.AsType[*FatalError](<-done); !ok || fatal.Refused {
			t.Errorf("Run: %#v, want a *FatalError not marked refused", fatal)
		}
	})
}

// TestRenew: a certificate due for renewal is renewed over the tunnel and
// used from then on; one that cannot be renewed before it expires ends
// Run with a *FatalError.
func TestRenew(t *testing.T) {
	tests := []struct {
		name    string
		renew   bool
		life    time.Duration // of the first certificate, from now
		renewed bool
	}{
		{"renewed", true, time.Minute, true},
		// 3 s: a certificate's times are whole seconds, so it may lose
		// nearly one to truncation before the agent loads it.
		{"refused until expiry", false, 3 * time.Second, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHostd(t, tc.renew)
			// Two thirds of its life gone: due for renewal at once.
			now := time.Now()
			cert := h.ca.Client(t, furiosa, tunneltest.Validity(now.Add(-2*tc.life), now.Add(tc.life)))
			p := write(t, h.ca, cert)
			st := loaded(t, p)
			s, done := start(t, Config{Addr: h.addr, Creds: st, Transport: tunnel.TransportTCP})
			h.accepted(t)
			if !tc.renewed {
				select {
				case err := <-done:
					if _, ok := errors.AsType[*FatalError](err); !ok || !strings.Contains(err.Error(), "certificate expired without renewal") {
						t.Fatalf("Run: %v, want a *FatalError for the expired certificate", err)
					}
				case <-time.After(30 * time.Second):
					t.Fatal("Run outlived its certificate")
				}
				return
			}
			deadline := time.Now().Add(30 * time.Second)
			for st.Leaf().SerialNumber.Cmp(cert.Leaf.SerialNumber) == 0 {
				if time.Now().After(deadline) {
					t.Fatal("the certificate was not renewed")
				}
				time.Sleep(10 * time.Millisecond)
			}
			if got := time.Until(st.Leaf().NotAfter); got < 50*time.Minute {
				t.Errorf("renewed certificate valid for %v more, want about an hour", got)
			}
			if got := loaded(t, p); got.Leaf().SerialNumber.Cmp(st.Leaf().SerialNumber) != 0 {
				t.Error("the renewed certificate was not saved")
			}
			if sess := session(t, s); sess.Err() != nil {
				t.Errorf("the session ended with the renewal: %v", sess.Err())
			}
		})
	}
}

// TestRenewByHostdClock: renewal is due by hostd's clock, which the agent
// reckons from the tunnel's welcome, not by its own: an agent 2 hours
// behind hostd renews a certificate that is due by hostd's clock at once
// (by its own clock, not for 80 minutes: it used to renew that late, and
// a certificate shorter-lived than the skew expired first).
func TestRenewByHostdClock(t *testing.T) {
	hostdNow := func() time.Time { return time.Now().Add(2 * time.Hour) }
	h := newHostdAt(t, true, hostdNow)
	// Valid for TLS by either clock; two thirds of its life gone by
	// hostd's at 1 h 20 min from now by this one.
	now := time.Now()
	cert := h.ca.Client(t, furiosa, tunneltest.Validity(now.Add(-time.Hour), now.Add(150*time.Minute)))
	st := loaded(t, write(t, h.ca, cert))
	start(t, Config{Addr: h.addr, Creds: st, Transport: tunnel.TransportTCP})
	h.accepted(t)
	for deadline := time.Now().Add(5 * time.Second); st.Leaf().SerialNumber.Cmp(cert.Leaf.SerialNumber) == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("a certificate due for renewal by hostd's clock was not renewed")
		}
	}
	if got := st.Leaf().NotAfter.Sub(hostdNow()); got < 50*time.Minute {
		t.Errorf("the renewal, by hostd's clock, is valid for %v more, want about an hour", got)
	}
}

// TestBackToQUIC: in auto mode an agent that fell back to TCP, because UDP
// was blocked, moves to QUIC once a probe finds UDP open again, and lets
// the TCP session go.
func TestBackToQUIC(t *testing.T) {
	h := newHostd(t, false)
	relay := tunneltest.NewRelay(t, h.addr)
	relay.BlockUDP(true)
	tc := tunnel.DefaultConfig()
	tc.FallbackDelay = 100 * time.Millisecond
	s, _ := start(t, Config{Addr: relay.Addr, Creds: loaded(t, write(t, h.ca, h.ca.Client(t, furiosa))), Transport: tunnel.TransportAuto,
		Tunnel: tc, ProbeInterval: 100 * time.Millisecond})
	tcp := h.accepted(t)
	if tcp.Transport() != tunnel.TransportTCP || session(t, s).Transport() != tunnel.TransportTCP {
		t.Fatalf("with UDP blocked: hostd sees %s, the agent %s; want tcp", tcp.Transport(), session(t, s).Transport())
	}
	relay.BlockUDP(false)
	if quic := h.accepted(t); quic.Transport() != tunnel.TransportQUIC {
		t.Fatalf("after UDP opened: a new %s session, want quic", quic.Transport())
	}
	select {
	case <-tcp.Done():
	case <-time.After(5 * time.Second):
		t.Error("the idle TCP session was kept")
	}
	if got := session(t, s).Transport(); got != tunnel.TransportQUIC {
		t.Errorf("Session gives a %s session, want quic", got)
	}
}

func TestJitter(t *testing.T) {
	for _, d := range []time.Duration{time.Nanosecond, 2, 100 * time.Millisecond, 10 * time.Second} {
		for range 100 {
			if j := jitter(d); j < d/2 || j > d {
				t.Fatalf("jitter(%v) = %v, want it in [%v, %v]", d, j, d/2, d)
			}
		}
	}
}

// TestConfig: New takes zero fields (the Tunnel's too) as the defaults
// and refuses a field out of its range, naming it.
func TestConfig(t *testing.T) {
	valid := func() Config {
		c := DefaultConfig()
		c.Addr, c.ServerName, c.Creds, c.Logger = "localhost:9876", "localhost", new(creds.Store), slog.New(slog.DiscardHandler)
		return c
	}
	settingstest.Run(t, valid, func(c Config) error { _, err := New(c); return err }, []settingstest.Case[Config]{
		{Name: "defaults"},
		{Name: "zero is the default", Set: func(c *Config) { *c = Config{Addr: c.Addr, ServerName: c.ServerName, Creds: c.Creds} }},
		{Name: "one tunnel field given", Set: func(c *Config) { c.Tunnel = tunnel.Config{IdleTimeout: time.Second} }},
		{Name: "TCP only", Set: func(c *Config) { c.Transport = tunnel.TransportTCP }},
		{Name: "no address", Set: func(c *Config) { c.Addr = "" }, Want: "supervisor: Addr is required"},
		{Name: "no server name", Set: func(c *Config) { c.ServerName = "" }, Want: "ServerName is required"},
		{Name: "no credentials", Set: func(c *Config) { c.Creds = nil }, Want: "Creds is required"},
		{Name: "unknown transport", Set: func(c *Config) { c.Transport = "udp" }, Want: `Transport is "udp": it must be auto, quic or tcp`},
		{Name: "tunnel out of range", Set: func(c *Config) { c.Tunnel.IdleTimeout = -time.Second }, Want: "Tunnel.IdleTimeout is -1s: it must be above 0"},
		{Name: "negative min backoff", Set: func(c *Config) { c.MinBackoff = -time.Second }, Want: "MinBackoff is -1s: it must be above 0"},
		{Name: "max backoff below min", Set: func(c *Config) { c.MaxBackoff = c.MinBackoff - 1 }, Want: "MaxBackoff is 99.999999ms: it must be at least 100ms"},
		{Name: "negative connect timeout", Set: func(c *Config) { c.ConnectTimeout = -time.Second }, Want: "ConnectTimeout is -1s: it must be above 0"},
		{Name: "negative probe interval", Set: func(c *Config) { c.ProbeInterval = -time.Second }, Want: "ProbeInterval is -1s: it must be above 0"},
	})
}
