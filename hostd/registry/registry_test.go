package registry

import (
	"context"
	"crypto/x509"
	"errors"
	"log/slog"
	"math/big"
	"sync"
	"testing"
	"time"

	"github.com/polecat-sidecar/sidecar/hostd/pki"
	"github.com/polecat-sidecar/sidecar/internal/settings/settingstest"
	"github.com/polecat-sidecar/sidecar/tunnel"
	"github.com/polecat-sidecar/sidecar/tunnel/tunneltest"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

var furiosa = wire.Identity{Rig: "gastown", Name: "furiosa"}

// fixture is a listener on loopback and a way to get server sessions of
// real tunnels from it.
type fixture struct {
	ca *tunneltest.CA
	ln *tunnel.Listener
}

func newFixture(t *testing.T) *fixture {
	ca := tunneltest.NewCA(t)
	ln, err := tunnel.Listen("127.0.0.1:0", ca.ServerConfig(ca.Server(t)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return &fixture{ca: ca, ln: ln}
}

// connect dials a tunnel as id with a certificate valid until notAfter and
// returns both ends.
func (f *fixture) connect(t *testing.T, id wire.Identity, notAfter time.Time) (client, server *tunnel.Session) {
	t.Helper()
	cc := f.ca.ClientConfig(f.ca.Client(t, id, tunneltest.Validity(time.Now().Add(-time.Minute), notAfter)))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	client, err := tunnel.Dial(ctx, f.ln.Addr(), cc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	server, err = f.ln.Accept(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { server.Close() })
	return client, server
}

// holdStream serves server and holds one stream open on it from client,
// until the test ends, returning once server counts it.
func holdStream(t *testing.T, client, server *tunnel.Session) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() {
		_ = server.Serve(ctx, tunnel.HandlerFunc(func(ctx context.Context, st *tunnel.Stream) { <-ctx.Done() }))
	}()
	st, err := client.OpenStream(context.Background(), wire.KindPing, nil)
	if err == nil {
		_, err = st.Write([]byte("x"))
	}
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); server.Streams() == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the server never took the stream")
		}
	}
}

// recorder keeps the events a registry sends.
type recorder struct {
	mu     sync.Mutex
	events []Event
}

func (r *recorder) add(ev Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, ev)
}

func (r *recorder) got() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Event(nil), r.events...)
}

func newRegistry(t *testing.T, drain time.Duration) (*Registry, *recorder) {
	r, err := New(Config{SupersededDrain: drain, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	r.Subscribe(rec.add)
	return r, rec
}

func TestConnectSupersedeDisconnect(t *testing.T) {
	f := newFixture(t)
	r, rec := newRegistry(t, time.Minute)
	_, s1 := f.connect(t, furiosa, time.Now().Add(time.Hour))
	c1 := r.Add(s1)
	if cur, ok := r.Current(furiosa); !ok || cur != c1 {
		t.Fatal("first session is not current")
	}
	if info := r.Snapshot()[furiosa]; info.Serial != pki.SerialOf(s1.PeerCertificate()) || info.Transport != tunnel.TransportQUIC {
		t.Errorf("snapshot %+v", info)
	}

	// A second tunnel of the same polecat becomes current; the first, with
	// no open stream, is closed as superseded and its end is no event.
	_, s2 := f.connect(t, furiosa, time.Now().Add(time.Hour))
	c2 := r.Add(s2)
	select {
	case <-s1.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("superseded idle session not closed")
	}
	r.Remove(c1, s1.Err())
	if cur, _ := r.Current(furiosa); cur != c2 {
		t.Error("current session is not the newer one")
	}
	r.Remove(c2, errors.New("lost"))
	if _, ok := r.Current(furiosa); ok {
		t.Error("still current after its session was removed")
	}
	evs := rec.got()
	if len(evs) != 3 || !evs[0].Connected || evs[0].Conn != c1 || !evs[1].Connected || evs[1].Conn != c2 ||
		evs[2].Connected || evs[2].Conn != c2 || evs[2].Err == nil || evs[2].Err.Error() != "lost" {
		t.Errorf("events %+v; want connect c1, connect c2, disconnect c2 (lost)", evs)
	}
}

// TestLateOlderTunnel: a tunnel accepted before another of its polecat but
// added after it (its welcome took longer: under a reconnect herd, its
// agent gave up on it and dialled again) does not take the newer one's
// place. It used to: the live tunnel drained for its 10 minutes while the
// polecat showed disconnected once the abandoned one ended.
func TestLateOlderTunnel(t *testing.T) {
	f := newFixture(t)
	r, rec := newRegistry(t, time.Hour)
	_, abandoned := f.connect(t, furiosa, time.Now().Add(time.Hour))
	client, live := f.connect(t, furiosa, time.Now().Add(time.Hour))
	holdStream(t, client, live) // as a beat stream is
	cLive := r.Add(live)
	cAbandoned := r.Add(abandoned)
	if cur, _ := r.Current(furiosa); cur != cLive {
		t.Fatal("the tunnel added late, though accepted first, became current")
	}
	select {
	case <-abandoned.Done(): // idle: drained at once
	case <-time.After(5 * time.Second):
		t.Fatal("the late, older tunnel was not drained")
	}
	r.Remove(cAbandoned, abandoned.Err())
	if cur, ok := r.Current(furiosa); !ok || cur != cLive {
		t.Error("the live tunnel is not current after the late one ended")
	}
	select {
	case <-live.Done():
		t.Error("the live tunnel was closed")
	case <-time.After(200 * time.Millisecond):
	}
	if evs := rec.got(); len(evs) != 1 || !evs[0].Connected || evs[0].Conn != cLive {
		t.Errorf("events %+v; want only the live tunnel's connect", evs)
	}
}

// TestAbandonedNewerTunnel: a newer tunnel of a polecat supersedes the one
// it uses, then ends (its agent had given up on it under load, having
// dialled again and got the older one): the older one, still up and
// draining, is current again and is not closed when its drain ends. It
// used to drain away while the polecat showed disconnected.
func TestAbandonedNewerTunnel(t *testing.T) {
	f := newFixture(t)
	r, rec := newRegistry(t, 500*time.Millisecond)
	client, live := f.connect(t, furiosa, time.Now().Add(time.Hour))
	holdStream(t, client, live) // as a beat stream is
	cLive := r.Add(live)
	abandonedClient, abandoned := f.connect(t, furiosa, time.Now().Add(time.Hour))
	cAbandoned := r.Add(abandoned)
	if cur, _ := r.Current(furiosa); cur != cAbandoned {
		t.Fatal("the newer tunnel is not current")
	}
	abandonedClient.Close()
	<-abandoned.Done()
	r.Remove(cAbandoned, abandoned.Err())
	if cur, ok := r.Current(furiosa); !ok || cur != cLive {
		t.Fatal("the older tunnel, still up, is not current again")
	}
	select {
	case <-live.Done():
		t.Error("the tunnel in use was closed when its drain ended")
	case <-time.After(time.Second): // twice the drain limit
	}
	evs := rec.got()
	if len(evs) != 3 || evs[2].Conn != cLive || !evs[2].Connected {
		t.Errorf("events %+v; want connect live, connect abandoned, connect live again (no disconnect)", evs)
	}
}

func TestSupersededDrainWaitsForStreams(t *testing.T) {
	f := newFixture(t)
	r, _ := newRegistry(t, 700*time.Millisecond)
	client, s1 := f.connect(t, furiosa, time.Now().Add(time.Hour))
	holdStream(t, client, s1)
	r.Add(s1)
	start := time.Now()
	_, s2 := f.connect(t, furiosa, time.Now().Add(time.Hour))
	r.Add(s2)
	select {
	case <-s1.Done():
		if d := time.Since(start); d < 500*time.Millisecond {
			t.Errorf("superseded session with an open stream closed after %v, before its drain limit", d)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("superseded session outlived its drain limit")
	}
}

func TestCloseIfAndExpiry(t *testing.T) {
	f := newFixture(t)
	r, _ := newRegistry(t, time.Minute)
	_, s1 := f.connect(t, furiosa, time.Now().Add(time.Hour))
	c1 := r.Add(s1)
	c1.Extend(&x509.Certificate{SerialNumber: big.NewInt(0xabc), NotAfter: time.Now().Add(2 * time.Hour)})
	serial := func(want string) func(wire.Identity, *x509.Certificate) bool {
		return func(_ wire.Identity, c *x509.Certificate) bool { return pki.SerialOf(c) == want }
	}
	if got := r.CloseIf(serial("other"), "certificate revoked"); len(got) != 0 {
		t.Fatalf("closed %v for an unrelated serial", got)
	}
	// Revoking the renewed certificate closes the session too.
	if got := r.CloseIf(serial("abc"), "certificate revoked"); len(got) != 1 || got[0] != furiosa {
		t.Fatalf("closed %v, want furiosa", got)
	}
	<-s1.Done()

	// A session whose certificate expires unrenewed is closed.
	nux := wire.Identity{Rig: "gastown", Name: "nux"}
	_, s2 := f.connect(t, nux, time.Now().Add(1500*time.Millisecond))
	r.Add(s2)
	select {
	case <-s2.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("session outlived its certificate")
	}
}

// TestTunnelLimit: a polecat opening tunnel after tunnel holds at most
// MaxTunnels; the newest always gets in.
func TestTunnelLimit(t *testing.T) {
	f := newFixture(t)
	r, err := New(Config{SupersededDrain: time.Hour, MaxTunnels: 2, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	var sessions []*tunnel.Session
	for range 5 {
		cli, srv := f.connect(t, furiosa, time.Now().Add(time.Hour))
		// Each holds a stream open, so draining alone would keep it.
		st, err := cli.OpenStream(context.Background(), wire.KindPing, nil)
		if err == nil {
			_, err = st.Write([]byte("x"))
		}
		if err == nil {
			_, err = srv.AcceptStream(context.Background())
		}
		if err != nil {
			t.Fatal(err)
		}
		r.Add(srv)
		sessions = append(sessions, srv)
	}
	for i, s := range sessions {
		closed := false
		select {
		case <-s.Done():
			closed = true
		case <-time.After(time.Second):
		}
		if want := i < 3; closed != want {
			t.Errorf("tunnel %d of 5: closed %v, want %v (the newest two kept)", i+1, closed, want)
		}
	}
}

// TestConfig: New takes a zero Config as the defaults and refuses a field
// out of its range, naming it.
func TestConfig(t *testing.T) {
	settingstest.Run(t, DefaultConfig, func(c Config) error { _, err := New(c); return err }, []settingstest.Case[Config]{
		{Name: "defaults"},
		{Name: "zero is the default", Set: func(c *Config) { *c = Config{} }},
		{Name: "negative drain", Set: func(c *Config) { c.SupersededDrain = -time.Second }, Want: "registry: SupersededDrain is -1s: it must be above 0"},
		{Name: "negative tunnels", Set: func(c *Config) { c.MaxTunnels = -1 }, Want: "registry: MaxTunnels is -1: it must be above 0"},
	})
}
