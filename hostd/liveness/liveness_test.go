package liveness

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/polecat-sidecar/sidecar/hostd/registry/registrytest"

	"github.com/polecat-sidecar/sidecar/heartbeat"
	"github.com/polecat-sidecar/sidecar/hostd/api"
	"github.com/polecat-sidecar/sidecar/hostd/registry"
	"github.com/polecat-sidecar/sidecar/hostd/state"
	"github.com/polecat-sidecar/sidecar/internal/settings/settingstest"
	"github.com/polecat-sidecar/sidecar/tunnel"
	"github.com/polecat-sidecar/sidecar/tunnel/tunneltest"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

var furiosa = wire.Identity{Rig: "gastown", Name: "furiosa"}

func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

// connect opens a real tunnel as furiosa; the server side is registered in
// reg and serves heartbeat streams with s.
func connect(t *testing.T, reg *registry.Registry, s *Service) (*tunnel.Session, *registry.Conn) {
	t.Helper()
	ca := tunneltest.NewCA(t)
	ln, err := tunnel.Listen("127.0.0.1:0", ca.ServerConfig(ca.Server(t)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	client, err := tunnel.Dial(ctx, ln.Addr(), ca.ClientConfig(ca.Client(t, furiosa)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	server, err := ln.Accept(ctx)
	if err != nil {
		t.Fatal(err)
	}
	mux := tunnel.NewServeMux()
	mux.Handle(wire.KindHeartbeat, s)
	go func() { _ = server.Serve(context.Background(), mux) }()
	return client, reg.Add(server)
}

func waitState(t *testing.T, s *Service, want heartbeat.State) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if d, _, ok := s.Detail(furiosa); ok && d.State == string(want) {
			return
		}
	}
	d, _, _ := s.Detail(furiosa)
	t.Fatalf("state %q (%s), want %q", d.State, d.Reason, want)
}

func TestBeatsConnectsAndPersistence(t *testing.T) {
	path := filepath.Join(t.TempDir(), "liveness.json")
	reg := registrytest.New(t)
	s, err := New(Config{Path: path, Logger: quiet()}, reg)
	if err != nil {
		t.Fatal(err)
	}
	client, conn := connect(t, reg, s)
	waitState(t, s, heartbeat.Starting) // connected, no beat yet

	st, err := client.OpenStream(context.Background(), wire.KindHeartbeat, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	b := &heartbeat.Beat{Seq: 1, Interval: 5, Session: heartbeat.Session{Name: "polecat", State: heartbeat.SessionRunning, IdleSeconds: 0, Processes: 3}}
	if err := heartbeat.NewWriter(st).Write(b); err != nil {
		t.Fatal(err)
	}
	waitState(t, s, heartbeat.Working)
	rows := s.Rows()
	if len(rows) != 1 || !rows[0].Connected || rows[0].Processes != 3 || rows[0].Transport != tunnel.TransportQUIC {
		t.Errorf("rows %+v", rows)
	}

	// A garbage line ends the stream and does not count.
	if _, err := st.Write([]byte("{not a beat}\n")); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Read(make([]byte, 1)); err == nil {
		t.Error("heartbeat stream still open after a malformed beat")
	}

	reg.Remove(conn, errors.New("tunnel lost"))
	waitState(t, s, heartbeat.Disconnected)
	s.Revoke(furiosa, time.Time{})
	waitState(t, s, heartbeat.Revoked)
	s.Flush()

	// A new service restores the last known state from the file.
	again, err := New(Config{Path: path, Logger: quiet()}, registrytest.New(t))
	if err != nil {
		t.Fatal(err)
	}
	d, _, ok := again.Detail(furiosa)
	if !ok || !d.Restored || d.State != string(heartbeat.Revoked) {
		t.Errorf("restored %+v (found %v), want furiosa revoked, marked restored", d, ok)
	}
}

func TestCorruptStateRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "liveness.json")
	if err := os.WriteFile(path, []byte(`[{"identity":`), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := New(Config{Path: path, Logger: quiet()}, registrytest.New(t))
	var ce *state.CorruptError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), path) {
		t.Fatalf("error %v, want a CorruptError naming %s", err, path)
	}
	if b, _ := os.ReadFile(path); string(b) != `[{"identity":` {
		t.Error("the corrupt file was changed")
	}
}

// TestConfig: New takes zero fields (the Thresholds' too) as the defaults
// and refuses a field out of its range, naming it.
func TestConfig(t *testing.T) {
	valid := func() Config {
		c := DefaultConfig()
		c.Logger = quiet()
		return c
	}
	check := func(c Config) error { _, err := New(c, registrytest.New(t)); return err }
	settingstest.Run(t, valid, check, []settingstest.Case[Config]{
		{Name: "defaults"},
		{Name: "zero is the default", Set: func(c *Config) { *c = Config{} }},
		{Name: "one threshold given", Set: func(c *Config) { c.Thresholds = heartbeat.Thresholds{Grace: time.Minute} }},
		{Name: "negative interval", Set: func(c *Config) { c.Thresholds.Interval = -time.Second }, Want: "liveness: Thresholds.Interval is -1s: it must be above 0"},
		{Name: "negative stale beats", Set: func(c *Config) { c.Thresholds.StaleBeats = -1 }, Want: "Thresholds.StaleBeats is -1: it must be above 0"},
		{Name: "negative idle after", Set: func(c *Config) { c.Thresholds.IdleAfter = -time.Second }, Want: "Thresholds.IdleAfter is -1s: it must be above 0"},
		{Name: "negative grace", Set: func(c *Config) { c.Thresholds.Grace = -time.Second }, Want: "Thresholds.Grace is -1s: it must be above 0"},
		{Name: "negative tick", Set: func(c *Config) { c.Tick = -time.Second }, Want: "Tick is -1s: it must be above 0"},
		{Name: "negative state logs", Set: func(c *Config) { c.StateLogs = -1 }, Want: "StateLogs is -1: it must be above 0"},
	})
}

// TestForget: a polecat whose tunnel is down is removed from the rows
// (status and /metrics read them) and from liveness.json at once; a
// connected one is refused, naming what to do; an unknown one is not
// found.
func TestForget(t *testing.T) {
	path := filepath.Join(t.TempDir(), "liveness.json")
	reg := registrytest.New(t)
	s, err := New(Config{Path: path, Logger: quiet()}, reg)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := s.Forget(furiosa); ok {
		t.Fatal("forgot a polecat hostd never saw")
	}
	_, conn := connect(t, reg, s)
	waitState(t, s, heartbeat.Starting)
	if _, ok, err := s.Forget(furiosa); !ok || err == nil || !strings.Contains(err.Error(), "gastown/furiosa is connected (its tunnel is up): hostd forgets only a polecat whose tunnel is down; stop its agent, or revoke it ('hostd cert revoke gastown/furiosa'), first") {
		t.Fatalf("forgot a connected polecat: %v, %v", ok, err)
	}
	reg.Remove(conn, errors.New("tunnel lost"))
	waitState(t, s, heartbeat.Disconnected)
	s.Flush()
	row, ok, err := s.Forget(furiosa)
	if !ok || err != nil || row.State != string(heartbeat.Disconnected) {
		t.Fatalf("forget: %+v, %v, %v", row, ok, err)
	}
	if len(s.Rows()) != 0 {
		t.Errorf("rows after forget: %+v", s.Rows())
	}
	var kept []heartbeat.Record
	if err := state.Load(path, &kept); err != nil || len(kept) != 0 {
		t.Errorf("liveness.json after forget: %+v, %v", kept, err)
	}
}

// TestNoSessionBoundedByHostdsClock: a polecat that beats, on a new
// tunnel each time, that no session has run in its sandbox yet and that
// its agent has just started is starting for Grace of hostd's clock from
// its first such beat, then dead; a hostd restarted meanwhile keeps that
// time (liveness.json), so a restart does not begin the bound again.
func TestNoSessionBoundedByHostdsClock(t *testing.T) {
	const grace = time.Second
	path := filepath.Join(t.TempDir(), "liveness.json")
	cfg := Config{Path: path, Logger: quiet(), Thresholds: heartbeat.Thresholds{Grace: grace}}
	hostile := &heartbeat.Beat{Interval: 5, Session: heartbeat.Session{Name: "polecat", State: heartbeat.SessionNotFound, NeverStarted: true}}
	// beatOnce connects as furiosa, beats hostile once with seq and
	// disconnects, answering the state hostd judged that beat.
	beatOnce := func(s *Service, reg *registry.Registry, seq uint64) api.Polecat {
		t.Helper()
		client, conn := connect(t, reg, s)
		defer func() { client.Close(); reg.Remove(conn, errors.New("reconnecting")) }()
		st, err := client.OpenStream(context.Background(), wire.KindHeartbeat, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		b := *hostile
		b.Seq = seq
		if err := heartbeat.NewWriter(st).Write(&b); err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			if d, rec, _ := s.Detail(furiosa); rec.LastBeat != nil && rec.LastBeat.Seq == seq {
				return d
			}
		}
		t.Fatalf("hostd did not take beat %d", seq)
		return api.Polecat{}
	}

	reg := registrytest.New(t)
	s, err := New(cfg, reg)
	if err != nil {
		t.Fatal(err)
	}
	first := time.Now()
	seq := uint64(1)
	for d := beatOnce(s, reg, seq); d.State != string(heartbeat.Dead); d = beatOnce(s, reg, seq) {
		if d.State != string(heartbeat.Starting) {
			t.Fatalf("beat %d: %s (%s), want starting until dead", seq, d.State, d.Reason)
		}
		if time.Since(first) > 10*grace {
			t.Fatalf("still %s (%s) %v after the first beat without a session, grace %v", d.State, d.Reason, time.Since(first), grace)
		}
		seq++
	}
	if took := time.Since(first); took < grace {
		t.Fatalf("dead %v after the first beat without a session, before the grace %v", took, grace)
	}
	if seq < 2 {
		t.Fatalf("dead at the first beat")
	}
	s.Flush()

	// A restarted hostd: the polecat's next such beat is dead at once.
	reg = registrytest.New(t)
	if s, err = New(cfg, reg); err != nil {
		t.Fatal(err)
	}
	if d := beatOnce(s, reg, seq+1); d.State != string(heartbeat.Dead) || !strings.Contains(d.Reason, "no session has started") {
		t.Fatalf("after hostd restarted: %s (%s), want dead: no session has started", d.State, d.Reason)
	}
}
