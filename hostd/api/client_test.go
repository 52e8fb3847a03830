package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/polecat-sidecar/sidecar/internal/unixsock"
	"github.com/polecat-sidecar/sidecar/internal/unixsock/unixsocktest"
)

var furiosa = Identity{Rig: "gastown", Name: "furiosa"}

// call is one request as the daemon received it.
type call struct {
	Method, Path, Query string
	Body                string
}

// daemon is a real HTTP server on the town's control socket that answers
// each route with a canned body and records what it was asked.
type daemon struct {
	sock string

	mu    sync.Mutex
	calls []call
}

// newDaemon serves routes ("METHOD /path" -> handler) on a new control
// socket until the test ends.
func newDaemon(t *testing.T, routes map[string]http.HandlerFunc) *daemon {
	t.Helper()
	d := &daemon{sock: filepath.Join(unixsocktest.Dir(t), "hostd.sock")}
	ln, err := net.Listen("unix", d.sock)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	for pattern, h := range routes {
		mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			d.mu.Lock()
			d.calls = append(d.calls, call{r.Method, r.URL.EscapedPath(), r.URL.RawQuery, string(body)})
			d.mu.Unlock()
			h(w, r)
		})
	}
	srv := &http.Server{Handler: mux}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { srv.Close() })
	return d
}

func (d *daemon) got() []call {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]call(nil), d.calls...)
}

// answer writes v as JSON.
func answer(v any) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) { _ = json.NewEncoder(w).Encode(v) }
}

// refuse answers status with hostd's error body.
func refuse(status int, why string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(map[string]string{"error": why})
	}
}

func TestClientCalls(t *testing.T) {
	ctx := context.Background()
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	outcome := NudgeOutcome{ID: "n1", Polecat: furiosa, Outcome: "submitted", At: at}
	tests := []struct {
		name   string
		route  string
		answer any
		do     func(c *Client) (any, error)
		want   call
	}{
		{"status", "GET /v1/status", Status{Version: "v9"},
			func(c *Client) (any, error) { return c.Status(ctx) },
			call{Method: "GET", Path: "/v1/status"}},
		{"polecat", "GET /v1/polecats/{rig}/{name}", PolecatDetail{Polecat: Polecat{Identity: furiosa, Rig: "gastown", Name: "furiosa"}},
			func(c *Client) (any, error) { return c.Polecat(ctx, furiosa) },
			call{Method: "GET", Path: "/v1/polecats/gastown/furiosa"}},
		{"reload revocations", "POST /v1/revocations/reload", map[string]int{"closed": 3},
			func(c *Client) (any, error) { return c.ReloadRevocations(ctx) },
			call{Method: "POST", Path: "/v1/revocations/reload"}},
		{"nudge", "POST /v1/nudges/{rig}/{name}", outcome,
			func(c *Client) (any, error) {
				return c.Nudge(ctx, furiosa, NudgeRequest{Text: "hi", Mode: "queue", Wait: time.Second})
			},
			call{Method: "POST", Path: "/v1/nudges/gastown/furiosa", Body: `{"text":"hi","mode":"queue","wait":1000000000}`}},
		{"nudge list", "GET /v1/nudges/{rig}/{name}", []NudgeItem{{ID: "n1", Polecat: furiosa, Text: "hi", Created: at, Expires: at}},
			func(c *Client) (any, error) { return c.NudgeList(ctx, furiosa) },
			call{Method: "GET", Path: "/v1/nudges/gastown/furiosa"}},
		{"nudge cancel", "DELETE /v1/nudges/{id}", outcome,
			func(c *Client) (any, error) { return c.NudgeCancel(ctx, "n1/x") },
			call{Method: "DELETE", Path: "/v1/nudges/n1%2Fx"}},
		{"sync log", "GET /v1/sync/log", []SyncRecord{{}},
			func(c *Client) (any, error) { return c.SyncLog(ctx) },
			call{Method: "GET", Path: "/v1/sync/log"}},
		{"sync status", "GET /v1/sync/status", SyncStatus{},
			func(c *Client) (any, error) { return c.SyncStatus(ctx) },
			call{Method: "GET", Path: "/v1/sync/status"}},
		{"sync push", "POST /v1/sync/{rig}/{name}/push", SyncResult{},
			func(c *Client) (any, error) { return c.SyncPush(ctx, furiosa, nil) },
			call{Method: "POST", Path: "/v1/sync/gastown/furiosa/push"}},
		{"sync pull, dry run", "POST /v1/sync/{rig}/{name}/pull", SyncResult{},
			func(c *Client) (any, error) {
				return c.SyncPull(ctx, furiosa, PullOptions{DryRun: true, AllowDeletes: true}, nil)
			},
			call{Method: "POST", Path: "/v1/sync/gastown/furiosa/pull", Query: "allow_deletes=1&dry_run=1"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := newDaemon(t, map[string]http.HandlerFunc{tc.route: answer(tc.answer)})
			got, err := tc.do(NewSocketClient(d.sock))
			if err != nil {
				t.Fatal(err)
			}
			want := tc.answer
			if m, ok := want.(map[string]int); ok {
				want = m["closed"]
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("answer %+v, want %+v", got, want)
			}
			if calls := d.got(); len(calls) != 1 || calls[0] != tc.want {
				t.Errorf("daemon was asked %+v, want %+v", calls, tc.want)
			}
		})
	}
}

func TestClientErrors(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name    string
		handler http.HandlerFunc // nil: no daemon
		do      func(c *Client) error
		want    string
		is      error
	}{
		{"no daemon", nil, func(c *Client) error { _, err := c.Status(ctx); return err }, "no daemon answers on", ErrNotRunning},
		{"no daemon to attach to", nil, func(c *Client) error { _, err := c.Attach(ctx, furiosa, false, 80, 24); return err }, "no daemon answers on", ErrNotRunning},
		{"refused", refuse(http.StatusNotFound, "no polecat gastown/furiosa"),
			func(c *Client) error { _, err := c.Status(ctx); return err }, "no polecat gastown/furiosa", nil},
		{"refused stream", refuse(http.StatusConflict, "a transfer is under way"),
			func(c *Client) error { return c.Peek(ctx, furiosa, 10, false, io.Discard) }, "a transfer is under way", nil},
		{"refused attach", refuse(http.StatusForbidden, "attach is off"),
			func(c *Client) error { _, err := c.Attach(ctx, furiosa, true, 80, 24); return err }, "hostd could not attach: attach is off", nil},
		{"refused without a reason", func(w http.ResponseWriter, _ *http.Request) { http.NotFound(w, nil) },
			func(c *Client) error { _, err := c.Status(ctx); return err }, "hostd answered GET /v1/status with 404 Not Found and no reason: is the running hostd older than this command?", nil},
		{"malformed answer", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("{")) },
			func(c *Client) error { _, err := c.Status(ctx); return err }, "decoding hostd's answer", nil},
		{"cancel without id", answer(NudgeOutcome{}),
			func(c *Client) error { _, err := c.NudgeCancel(ctx, ""); return err }, "which nudge?", nil},
		{"progress cut short", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(`{"progress":{}}` + "\n")) },
			func(c *Client) error { _, err := c.SyncPush(ctx, furiosa, func(SyncProgress) {}); return err }, "reading hostd's progress", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			routes := map[string]http.HandlerFunc{}
			if tc.handler != nil {
				routes["/"] = tc.handler
			}
			d := newDaemon(t, routes)
			if tc.handler == nil {
				_ = os.Remove(d.sock)
			}
			err := tc.do(NewSocketClient(d.sock))
			if err == nil || !strings.Contains(err.Error(), tc.want) || (tc.is != nil && !errors.Is(err, tc.is)) {
				t.Fatalf("error %v, want one saying %q (is %v)", err, tc.want, tc.is)
			}
			// A reason hostd gave is the message: no HTTP status line.
			var refused *Error
			if errors.As(err, &refused) && refused.Message != "" && !strings.Contains(tc.want, "/v1/") &&
				(strings.Contains(err.Error(), "/v1/") || strings.Contains(err.Error(), http.StatusText(refused.Status))) {
				t.Errorf("error %q carries the HTTP exchange, not just hostd's reason", err)
			}
			if tc.name == "cancel without id" && len(d.got()) != 0 {
				t.Errorf("asked the daemon %+v for no nudge", d.got())
			}
		})
	}
}

// TestClientSocketTooLong: a control socket path longer than the system
// takes (as under macOS's long temporary directories) gets an error
// saying so, not "hostd is not running" nor "invalid argument".
func TestClientSocketTooLong(t *testing.T) {
	sock := filepath.Join(t.TempDir(), strings.Repeat("t", unixsock.MaxPath), "hostd.sock")
	for name, call := range map[string]func(*Client) error{
		"status": func(c *Client) error { _, err := c.Status(context.Background()); return err },
		"attach": func(c *Client) error { _, err := c.Attach(context.Background(), furiosa, false, 80, 24); return err },
	} {
		err := call(NewSocketClient(sock))
		if !errors.Is(err, unixsock.ErrTooLong) || errors.Is(err, ErrNotRunning) || !strings.HasPrefix(err.Error(), "asking hostd: socket path too long: "+sock) {
			t.Errorf("%s: %v, want the path named too long", name, err)
		}
	}
}

// TestSyncProgress: a transfer with progress reads the daemon's lines,
// telling each progress line and returning the result.
func TestSyncProgress(t *testing.T) {
	lines := []SyncLine{
		{Progress: &SyncProgress{Files: 1, Bytes: 10, TotalFiles: 7}},
		{Progress: &SyncProgress{Files: 3, Bytes: 20, TotalFiles: 7}},
		{Result: &SyncResult{Files: 7}},
	}
	d := newDaemon(t, map[string]http.HandlerFunc{"POST /v1/sync/{rig}/{name}/{op}": func(w http.ResponseWriter, _ *http.Request) {
		for _, l := range lines {
			_ = json.NewEncoder(w).Encode(l)
		}
	}})
	c := NewSocketClient(d.sock)
	tests := []struct {
		name  string
		do    func(progress func(SyncProgress)) (SyncResult, error)
		query string
	}{
		{"push", func(p func(SyncProgress)) (SyncResult, error) {
			return c.SyncPush(context.Background(), furiosa, p)
		}, "progress=1"},
		{"pull", func(p func(SyncProgress)) (SyncResult, error) {
			return c.SyncPull(context.Background(), furiosa, PullOptions{DryRun: true}, p)
		}, "dry_run=1&progress=1"},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var heard []SyncProgress
			res, err := tc.do(func(p SyncProgress) { heard = append(heard, p) })
			if err != nil || res.Files != 7 {
				t.Fatalf("result %+v, %v", res, err)
			}
			if len(heard) != 2 || heard[0] != *lines[0].Progress || heard[1] != *lines[1].Progress {
				t.Errorf("progress heard %+v", heard)
			}
			if q := d.got()[i].Query; q != tc.query {
				t.Errorf("query %q, want %q", q, tc.query)
			}
		})
	}
}

// TestPeek: a peek streams the daemon's body to the writer as it comes.
func TestPeek(t *testing.T) {
	d := newDaemon(t, map[string]http.HandlerFunc{"GET /v1/pane/{rig}/{name}": func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("line 1\n"))
		w.(http.Flusher).Flush()
		_, _ = w.Write([]byte("line 2\n"))
	}})
	var out bytes.Buffer
	if err := NewSocketClient(d.sock).Peek(context.Background(), furiosa, 40, true, &out); err != nil {
		t.Fatal(err)
	}
	if out.String() != "line 1\nline 2\n" {
		t.Errorf("peek wrote %q", out.String())
	}
	if c := d.got()[0]; c.Path != "/v1/pane/gastown/furiosa" || c.Query != "lines=40&follow=1" {
		t.Errorf("asked %+v", c)
	}
}

// TestAttach: attach upgrades the connection, then carries bytes both
// ways, including those the daemon sent right behind its answer.
func TestAttach(t *testing.T) {
	d := newDaemon(t, map[string]http.HandlerFunc{"POST /v1/pane/{rig}/{name}/attach": func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") != PaneUpgrade {
			refuse(http.StatusBadRequest, "not an upgrade")(w, r)
			return
		}
		conn, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		_, _ = brw.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: " + PaneUpgrade + "\r\n\r\nwelcome|")
		_ = brw.Flush()
		buf := make([]byte, 5)
		if _, err := io.ReadFull(brw, buf); err == nil {
			_, _ = conn.Write(append([]byte("echo:"), buf...))
		}
	}})
	rw, err := NewSocketClient(d.sock).Attach(context.Background(), furiosa, true, 120, 40)
	if err != nil {
		t.Fatal(err)
	}
	defer rw.Close()
	if _, err := rw.Write([]byte("keys!")); err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(rw)
	if string(got) != "welcome|echo:keys!" {
		t.Errorf("read %q", got)
	}
	if c := d.got()[0]; c.Path != "/v1/pane/gastown/furiosa/attach" || c.Query != "write=1&cols=120&rows=40" {
		t.Errorf("asked %+v", c)
	}
}
