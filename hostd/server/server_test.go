package server

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/polecat-sidecar/sidecar/hostd/api"
	"github.com/polecat-sidecar/sidecar/hostd/pki"
	"github.com/polecat-sidecar/sidecar/internal/settings/settingstest"
	"github.com/polecat-sidecar/sidecar/internal/unixsock/unixsocktest"
	"github.com/polecat-sidecar/sidecar/tunnel"
	"github.com/polecat-sidecar/sidecar/tunnel/tunneltest"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

var furiosa = wire.Identity{Rig: "gastown", Name: "furiosa"}

// fixture is a running hostd server on loopback with its CA.
type fixture struct {
	ca   *pki.CA
	addr string
}

// newFixture starts hostd with the Config of a fresh town, changed by
// each of adjust.
func newFixture(t *testing.T, adjust ...func(*Config)) *fixture {
	t.Helper()
	town := unixsocktest.Dir(t) // Run opens the control socket in it
	ca, _, err := pki.Init(pki.Dir(town), "")
	if err != nil {
		t.Fatal(err)
	}
	addr := tunneltest.FreeAddr(t)
	cfg := Config{Town: town, Listen: addr, Logger: slog.New(slog.DiscardHandler)}
	for _, f := range adjust {
		f(&cfg)
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	f := &fixture{ca: ca, addr: addr}
	f.waitUp(t)
	return f
}

func (f *fixture) waitUp(t *testing.T) {
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if c, err := tls.Dial("tcp", f.addr, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{wire.JoinALPN}}); err == nil {
			c.Close()
			return
		}
	}
	t.Fatal("server did not come up")
}

// client issues a certificate valid for ttl and dials with it.
func (f *fixture) client(t *testing.T, ttl time.Duration) *tunnel.Session {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	cert, err := f.ca.IssueClient(furiosa, key.Public(), ttl, pki.SourceIssue)
	if err != nil {
		t.Fatal(err)
	}
	tc := tls.Certificate{Certificate: [][]byte{cert.Raw}, PrivateKey: key, Leaf: cert}
	s, err := tunnel.Dial(context.Background(), f.addr, tunnel.ClientConfig{
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &tc, nil },
		RootCAs:              f.ca.Pool(),
		ServerName:           "localhost",
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestUnrenewedSessionClosedAtExpiry(t *testing.T) {
	f := newFixture(t)
	s := f.client(t, pki.MinTTL)
	select {
	case <-s.Done():
		if !strings.Contains(s.Err().Error(), "certificate expired") {
			t.Errorf("closed for %v, want certificate expiry", s.Err())
		}
	case <-time.After(pki.MinTTL + 3*time.Second):
		t.Fatal("session outlived its certificate")
	}
}

func TestRenewalRefusals(t *testing.T) {
	f := newFixture(t)
	s := f.client(t, time.Hour)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	good, _ := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{}, key)
	tampered := append([]byte(nil), good...)
	tampered[len(tampered)-3] ^= 0x55
	for name, body := range map[string][]byte{
		"empty":         nil,
		"garbage":       []byte("please sign me"),
		"bad signature": tampered,
		"oversized":     make([]byte, wire.MaxCSR+10),
	} {
		t.Run(name, func(t *testing.T) {
			st, err := s.OpenStream(context.Background(), wire.KindCert, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			_, _ = st.Write(body)
			_ = st.CloseWrite()
			_, err = io.ReadAll(st)
			var re *wire.RemoteError
			if !errors.As(err, &re) {
				t.Fatalf("got %v, want a refusal", err)
			}
		})
	}
	if s.Err() != nil {
		t.Fatalf("session died after refused renewals: %v", s.Err())
	}
	recs, _ := f.ca.Records()
	if len(recs) != 1 {
		t.Errorf("%d certificates recorded after refused renewals, want only the original", len(recs))
	}
	// Unknown kinds are refused with the list of what hostd serves.
	st, _ := s.OpenStream(context.Background(), "bogus", nil)
	defer st.Close()
	if _, err := st.Read(make([]byte, 1)); err == nil || !strings.Contains(err.Error(), "cert") {
		t.Errorf("unknown kind: %v", err)
	}
}

// joinExchange sends one raw line on a join connection and returns the
// decoded answer.
func joinExchange(t *testing.T, addr string, line []byte) wire.JoinResponse {
	t.Helper()
	c, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{wire.JoinALPN}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	_, _ = c.Write(line)
	var resp wire.JoinResponse
	if err := wire.ReadJoinMessage(c, &resp); err != nil {
		t.Fatalf("reading join answer: %v", err)
	}
	return resp
}

func TestJoinHostile(t *testing.T) {
	f := newFixture(t)
	token, err := f.ca.CreateToken(furiosa, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	csr, _ := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{}, key)
	msg := func(tok, id string, csr []byte) []byte {
		var b strings.Builder
		_ = wire.WriteJoinMessage(&b, map[string]any{"token": tok, "identity": id, "csr": csr})
		return []byte(b.String())
	}
	for name, line := range map[string][]byte{
		"not json":        []byte("GET / HTTP/1.1\r\n\r\n"),
		"unknown field":   []byte(`{"token":"x","admin":true}` + "\n"),
		"oversized":       append([]byte(`{"token":"`+strings.Repeat("a", 40<<10)), '"', '}', '\n'),
		"bad identity":    msg(token, "gastown/-furiosa", csr),
		"garbage csr":     msg(token, "gastown/furiosa", []byte("csr")),
		"no csr":          msg(token, "gastown/furiosa", nil),
		"forged token":    msg("gtj1.AAAAAAAAAAAAAAAAAAAAAA.AAAAAAAAAAAAAAAAAAAAAA."+strings.Split(token, ".")[3], "gastown/furiosa", csr),
		"malformed token": msg("x", "gastown/furiosa", csr),
	} {
		t.Run(name, func(t *testing.T) {
			if resp := joinExchange(t, f.addr, line); resp.Error == "" || resp.Cert != nil {
				t.Fatalf("answer %+v, want a refusal", resp)
			}
		})
	}
	// None of that spent the token.
	resp := joinExchange(t, f.addr, msg(token, "gastown/furiosa", csr))
	if resp.Error != "" || resp.Cert == nil {
		t.Fatalf("valid join after hostile attempts: %+v", resp)
	}
}

// TestConfig: New takes zero fields (the Tunnel's too) as the defaults,
// a false Upstream as off, and refuses a field out of its range, naming
// it.
func TestConfig(t *testing.T) {
	town := t.TempDir()
	if _, _, err := pki.Init(pki.Dir(town), ""); err != nil {
		t.Fatal(err)
	}
	valid := func() Config {
		c := DefaultConfig()
		c.Town, c.Logger = town, slog.New(slog.DiscardHandler)
		return c
	}
	check := func(c Config) error {
		s, err := New(c)
		if err == nil && (s.queue != nil) != c.Upstream {
			return fmt.Errorf("Upstream %v, but the upstream queue is %v", c.Upstream, s.queue)
		}
		return err
	}
	settingstest.Run(t, valid, check, []settingstest.Case[Config]{
		{Name: "defaults"},
		{Name: "zero is the default, upstream off", Set: func(c *Config) { *c = Config{Town: c.Town, Logger: c.Logger} }},
		{Name: "one tunnel field given", Set: func(c *Config) { c.Tunnel = tunnel.Config{IdleTimeout: time.Second} }},
		{Name: "no town", Set: func(c *Config) { c.Town = "" }, Want: "server: Town is required"},
		{Name: "tunnel out of range", Set: func(c *Config) { c.Tunnel.KeepAlive = -time.Second }, Want: "server: Tunnel.KeepAlive is -1s: it must be at least 0"},
		{Name: "never reap", Set: func(c *Config) { c.SandboxReap = 0 }},
		{Name: "negative reap", Set: func(c *Config) { c.SandboxReap = -time.Second }, Want: "server: SandboxReap is -1s: it must be at least 0"},
		{Name: "a service's field out of range", Set: func(c *Config) { c.Nudge.Depth = -1 }, Want: "nudge: Depth is -1: it must be above 0"},
		{Name: "admin API on loopback", Set: func(c *Config) { c.AdminListen = "127.0.0.1:9877" }},
		{Name: "admin API on every address", Set: func(c *Config) { c.AdminListen = "0.0.0.0:9877" }, Want: `server: AdminListen is "0.0.0.0:9877": "0.0.0.0:9877" is not a loopback address`},
	})
}

// TestValidate: Validate, which hostd serve runs on its settings before
// New, names each field out of range by its path in this Config, each
// service's too, and refuses a zero given where zero is out of range
// (New would take it as the default).
func TestValidate(t *testing.T) {
	valid := func() Config {
		c := DefaultConfig()
		c.Town = "/town"
		return c
	}
	// filledIn drops the errors on fields New fills in, as settings.Explain
	// does; the defaults must leave none other.
	filledIn := func(c Config) error {
		c.Git.Town, c.Git.HooksDir, c.Git.TempDir, c.Data.Dir, c.Nudge.Path = "/t", "/h", "/l", "/d", "/n"
		return c.Validate()
	}
	settingstest.Run(t, valid, filledIn, []settingstest.Case[Config]{
		{Name: "defaults"},
		{Name: "reaping off", Set: func(c *Config) { c.SandboxReap = 0 }},
		{Name: "no relay timeout", Set: func(c *Config) { c.Relay.Timeout = 0 }},
		{Name: "zero certificate lifetime", Set: func(c *Config) { c.Certs.TTL = 0 }, Want: "Certs.TTL is 0s: it must be above 0"},
		{Name: "negative certificate lifetime", Set: func(c *Config) { c.Certs.TTL = -time.Hour }, Want: "Certs.TTL is -1h0m0s: it must be above 0"},
		{Name: "zero grace", Set: func(c *Config) { c.Liveness.Thresholds.Grace = 0 }, Want: "Liveness.Thresholds.Grace is 0s: it must be above 0"},
		{Name: "keepalive not below the idle timeout", Set: func(c *Config) { c.Tunnel.KeepAlive, c.Tunnel.IdleTimeout = 4*time.Second, 4*time.Second },
			Want: "Tunnel.KeepAlive is 4s: it must be below Tunnel.IdleTimeout (4s)"},
		{Name: "zero reconcile", Set: func(c *Config) { c.Git.Reconcile = 0 }, Want: "Git.Reconcile is 0s: it must not be 0"},
		{Name: "bad branch pattern", Set: func(c *Config) { c.Git.Branches = map[string][]string{"gastown": {"main"}} }, Want: "Git.Branches.gastown is [main]"},
		{Name: "upstream retry above its longest wait", Set: func(c *Config) { c.UpstreamConfig.MinBackoff = time.Hour },
			Want: "UpstreamConfig.MinBackoff is 1h0m0s: it must be at most UpstreamConfig.MaxBackoff (5m0s)"},
		{Name: "zero nudge depth", Set: func(c *Config) { c.Nudge.Depth = 0 }, Want: "Nudge.Depth is 0: it must be above 0"},
		{Name: "zero renewals", Set: func(c *Config) { c.Certs.RenewalsPerHour = 0 }, Want: "Certs.RenewalsPerHour is 0: it must be above 0"},
		{Name: "empty allow list", Set: func(c *Config) { c.Relay.Policy.Allow = map[string][]string{} }, Want: "Relay.Policy.Allow is empty"},
	})
	if err := valid().Validate(); err == nil || !strings.Contains(err.Error(), "Data.Dir is required") {
		t.Errorf("Validate takes the fields New fills in as given: %v", err)
	}
}

// TestListenersFatal: a metrics or admin address hostd cannot listen on
// stops Run with an error naming the setting, instead of only a log line.
func TestListenersFatal(t *testing.T) {
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	for _, c := range []struct {
		name string
		set  func(*Config)
		want string
	}{
		{"metrics", func(c *Config) { c.MetricsListen = held.Addr().String() }, "serving metrics (metrics_listen): "},
		{"admin", func(c *Config) { c.AdminListen = held.Addr().String() }, "serving the admin API (admin_listen): "},
	} {
		t.Run(c.name, func(t *testing.T) {
			town := t.TempDir()
			if _, _, err := pki.Init(pki.Dir(town), ""); err != nil {
				t.Fatal(err)
			}
			cfg := Config{Town: town, Listen: tunneltest.FreeAddr(t), Logger: slog.New(slog.DiscardHandler)}
			c.set(&cfg)
			s, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			err = s.Run(ctx)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "address already in use") {
				t.Fatalf("Run: %v, want %q", err, c.want)
			}
		})
	}
}

// TestAdminListen: with AdminListen set, gt-proxy-server's admin calls
// work over plain HTTP as Gas Town's admin client makes them: health, and
// issue-cert answering a certificate of the town's CA for the polecat.
func TestAdminListen(t *testing.T) {
	admin := tunneltest.FreeAddr(t)
	f := newFixture(t, func(c *Config) { c.AdminListen = admin })
	var health *http.Response
	var err error
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if health, err = http.Get("http://" + admin + "/v1/admin/health"); err == nil {
			break
		}
	}
	if err != nil || health.StatusCode != http.StatusOK {
		t.Fatalf("health: %v %v", health, err)
	}
	health.Body.Close()
	res, err := http.Post("http://"+admin+"/v1/admin/issue-cert", "application/json", strings.NewReader(`{"rig":"gastown","name":"furiosa","ttl":"1h"}`))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var issued api.IssuedCert
	if err := json.NewDecoder(res.Body).Decode(&issued); err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("issue-cert: %d, %v", res.StatusCode, err)
	}
	cert, err := pki.ParseCertPEM([]byte(issued.Cert))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cert.Verify(x509.VerifyOptions{Roots: f.ca.Pool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil || issued.CN != furiosa.CommonName() {
		t.Errorf("issued %s: %v", issued.CN, err)
	}
}
