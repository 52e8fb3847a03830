package control

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/polecat-sidecar/sidecar/hostd/api"
	"github.com/polecat-sidecar/sidecar/hostd/state"
	"github.com/polecat-sidecar/sidecar/internal/unixsock/unixsocktest"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// The fake's sandbox channel: "n" is connected and echoes what it is
// sent, upper-cased; "late" never connects; the others fail.
func (f *fakeDaemon) Open(_ context.Context, id wire.Identity, wait time.Duration, upgrade func() (io.ReadWriteCloser, error)) error {
	f.opened = append(f.opened, wait)
	switch id.Name {
	case "late":
		return fmt.Errorf("%w (waited %v)", api.ErrNotConnected, wait)
	case "n":
	default:
		return errors.New("opening the stream failed")
	}
	conn, err := upgrade()
	if err != nil {
		return err
	}
	defer conn.Close()
	buf := make([]byte, 64)
	n, _ := conn.Read(buf)
	_, _ = conn.Write([]byte(strings.ToUpper(string(buf[:n]))))
	return nil
}

// TestSandboxAPI: the sandbox channel upgrades the connection to carry
// bytes both ways, with the wait asked for; a polecat that does not
// connect in time is api.ErrNotConnected, another failure hostd's reason,
// and a wait out of range is refused before anything is opened.
func TestSandboxAPI(t *testing.T) {
	town := unixsocktest.Dir(t)
	ln, err := Listen(town)
	if err != nil {
		t.Fatal(err)
	}
	d := &fakeDaemon{}
	srv := &http.Server{Handler: Handler(d.services()), ReadHeaderTimeout: time.Second}
	go srv.Serve(ln)
	defer srv.Close()
	c := api.NewSocketClient(state.For(town).Socket())
	ctx := context.Background()
	conn, err := c.Sandbox(ctx, api.Identity{Rig: "r", Name: "n"}, 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = conn.Write([]byte("request"))
	if b, err := io.ReadAll(conn); err != nil || string(b) != "REQUEST" {
		t.Fatalf("the channel's answer: %q %v", b, err)
	}
	conn.Close()
	if _, err := c.Sandbox(ctx, api.Identity{Rig: "r", Name: "late"}, time.Second); !errors.Is(err, api.ErrNotConnected) {
		t.Errorf("a polecat that does not connect: %v, want api.ErrNotConnected", err)
	}
	if _, err := c.Sandbox(ctx, api.Identity{Rig: "r", Name: "x"}, time.Second); err == nil || !strings.Contains(err.Error(), "opening the stream failed") {
		t.Errorf("a failure: %v, want hostd's reason", err)
	}
	if _, err := c.Sandbox(ctx, api.Identity{Rig: "r", Name: "n"}, time.Hour); err == nil || !strings.Contains(err.Error(), "a duration from 0 to 5m0s") {
		t.Errorf("a wait of an hour: %v, want it refused", err)
	}
	if want := []time.Duration{3 * time.Second, time.Second, time.Second}; fmt.Sprint(d.opened) != fmt.Sprint(want) {
		t.Errorf("the waits that reached the daemon: %v, want %v", d.opened, want)
	}
}
