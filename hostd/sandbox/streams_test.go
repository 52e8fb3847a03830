package sandbox

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/polecat-sidecar/sidecar/hostd/api"
	"github.com/polecat-sidecar/sidecar/hostd/registry"
	"github.com/polecat-sidecar/sidecar/hostd/registry/registrytest"
	"github.com/polecat-sidecar/sidecar/tunnel"
	"github.com/polecat-sidecar/sidecar/tunnel/tunneltest"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// connect holds a real tunnel of id whose agent serves mux, registered as
// id's current one in reg.
func connect(t *testing.T, reg *registry.Registry, id wire.Identity, mux *tunnel.ServeMux) {
	t.Helper()
	agent, host := tunneltest.Pair(t, id)
	tunneltest.Serve(t, agent, mux)
	c := reg.Add(host)
	t.Cleanup(func() { reg.Remove(c, nil) })
}

// open runs Streams.Open for id in the background, with hostd run's end
// of the connection it upgrades to returned.
func open(t *testing.T, s *Streams, id wire.Identity, wait time.Duration) (net.Conn, <-chan error) {
	t.Helper()
	run, serve := net.Pipe()
	t.Cleanup(func() { run.Close() })
	done := make(chan error, 1)
	go func() {
		done <- s.Open(context.Background(), id, wait, func() (io.ReadWriteCloser, error) { return serve, nil })
		serve.Close()
	}()
	return run, done
}

// TestStreams: a sandbox stream asked for before the polecat's agent has
// connected waits for it, then carries hostd run's request to the agent
// and the answers back, and hostd run closing its connection ends the
// agent's stream; one that does not connect in time is
// api.ErrNotConnected; an agent that refuses the stream (an older one,
// which serves no such kind) is a failed answer saying why.
func TestStreams(t *testing.T) {
	reg := registrytest.New(t)
	s := NewStreams(reg)
	ended := make(chan error, 1)
	mux := tunnel.NewServeMux()
	mux.HandleFunc(wire.KindSandbox, func(_ context.Context, st *tunnel.Stream) {
		if _, err := wire.ReadSandboxRequest(st); err != nil {
			_ = st.Reject(err.Error())
			return
		}
		_ = wire.WriteSandboxAnswer(st, wire.SandboxAnswer{Status: wire.SandboxStarted})
		_, err := io.Copy(io.Discard, st) // until hostd run goes
		ended <- err
	})

	run, done := open(t, s, toast, 30*time.Second)
	connect(t, reg, toast, mux)
	_ = run.SetDeadline(time.Now().Add(10 * time.Second))
	if err := wire.WriteSandboxRequest(run, wire.SandboxRequest{Op: wire.SandboxWait, Tag: "t"}); err != nil {
		t.Fatal(err)
	}
	if a, err := wire.NewSandboxAnswers(run).Next(); err != nil || a.Status != wire.SandboxStarted {
		t.Fatalf("the agent's answer through hostd: %+v, %v", a, err)
	}
	run.Close()
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("the agent's stream goes on after hostd run closed its connection")
	}
	if err := <-done; err != nil {
		t.Errorf("Open: %v", err)
	}

	nux := wire.Identity{Rig: "gastown", Name: "nux"}
	start := time.Now()
	if _, done := open(t, s, nux, 200*time.Millisecond); !errors.Is(<-done, api.ErrNotConnected) || time.Since(start) > 5*time.Second {
		t.Errorf("a polecat that does not connect: want api.ErrNotConnected after the wait")
	}

	old := wire.Identity{Rig: "gastown", Name: "old"}
	connect(t, reg, old, tunnel.NewServeMux())
	run, done = open(t, s, old, time.Second)
	_ = run.SetDeadline(time.Now().Add(10 * time.Second))
	if err := wire.WriteSandboxRequest(run, wire.SandboxRequest{Op: wire.SandboxWait, Tag: "t"}); err != nil {
		t.Fatal(err)
	}
	if a, err := wire.NewSandboxAnswers(run).Next(); err != nil || a.Status != wire.SandboxFailed || !strings.Contains(a.Error, `the agent refused: unknown stream kind "sandbox"`) {
		t.Errorf("an agent that refuses the stream: %+v, %v; want a failed answer saying why", a, err)
	}
	if err := <-done; err != nil {
		t.Errorf("Open: %v", err)
	}
}
