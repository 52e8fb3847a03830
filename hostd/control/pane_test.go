package control

import (
	"context"
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

// The fake's pane: peek writes numbered lines; attach answers "ready",
// then echoes what it is sent, upper-cased.
func (f *fakeDaemon) Peek(_ context.Context, id wire.Identity, lines int, _ bool, w io.Writer) error {
	if id.Name != "n" {
		return fmt.Errorf("%s is not connected", id)
	}
	for i := range lines {
		fmt.Fprintf(w, "line %d\n", i)
	}
	return nil
}

func (f *fakeDaemon) Attach(_ context.Context, id wire.Identity, req wire.PaneRequest, upgrade func() (io.ReadWriteCloser, error)) error {
	if id.Name != "n" {
		return fmt.Errorf("%s is not connected", id)
	}
	f.attached = append(f.attached, req)
	conn, err := upgrade()
	if err != nil {
		return err
	}
	defer conn.Close()
	_, _ = conn.Write([]byte("ready"))
	buf := make([]byte, 64)
	n, _ := conn.Read(buf)
	_, _ = conn.Write([]byte(strings.ToUpper(string(buf[:n]))))
	return nil
}

// TestPaneAPI: peek streams over the socket, a failure before any output
// is an error with hostd's reason, and attach upgrades the connection to
// carry bytes both ways.
func TestPaneAPI(t *testing.T) {
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
	var out strings.Builder
	if err := c.Peek(ctx, api.Identity{Rig: "r", Name: "n"}, 3, false, &out); err != nil || out.String() != "line 0\nline 1\nline 2\n" {
		t.Fatalf("peek: %q %v", out.String(), err)
	}
	if err := c.Peek(ctx, api.Identity{Rig: "r", Name: "gone"}, 3, false, io.Discard); err == nil || !strings.Contains(err.Error(), "not connected") {
		t.Fatalf("peek at a polecat that is not there: %v", err)
	}
	conn, err := c.Attach(ctx, api.Identity{Rig: "r", Name: "n"}, true, 80, 24)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	buf := make([]byte, 5)
	if _, err := io.ReadFull(conn, buf); err != nil || string(buf) != "ready" {
		t.Fatalf("attach's first output: %q %v", buf, err)
	}
	_, _ = conn.Write([]byte("keys"))
	if _, err := io.ReadFull(conn, buf[:4]); err != nil || string(buf[:4]) != "KEYS" {
		t.Fatalf("attach's echo: %q %v", buf[:4], err)
	}
	if got := d.attached[0]; !got.Write || got.Cols != 80 || got.Rows != 24 {
		t.Errorf("the attach request reached the daemon as %+v", got)
	}
	if _, err := c.Attach(ctx, api.Identity{Rig: "r", Name: "gone"}, false, 80, 24); err == nil || !strings.Contains(err.Error(), "not connected") {
		t.Fatalf("attach to a polecat that is not there: %v", err)
	}
	if _, err := c.Attach(ctx, api.Identity{Rig: "r", Name: "n"}, false, 0, 24); err == nil {
		t.Fatal("attach with no size")
	}
}
