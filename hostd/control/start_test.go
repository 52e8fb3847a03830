package control

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/polecat-sidecar/sidecar/hostd/api"
	"github.com/polecat-sidecar/sidecar/hostd/state"
	"github.com/polecat-sidecar/sidecar/internal/unixsock/unixsocktest"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// TestStartFailures: hostd run's report of a failed start is recorded and
// shown, in status and in the polecat's detail (one that never connected
// shows as dead, for that reason), until its report of a start that
// succeeded clears it; a bad identity or body is refused and records
// nothing.
func TestStartFailures(t *testing.T) {
	town := unixsocktest.Dir(t)
	ln, err := Listen(town)
	if err != nil {
		t.Fatal(err)
	}
	d := &fakeDaemon{}
	srv := &http.Server{Handler: Handler(d.services())}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	c, ctx := api.NewSocketClient(state.For(town).Socket()), context.Background()
	toast, known := wire.Identity{Rig: "gastown", Name: "toast"}, wire.Identity{Rig: "r", Name: "n"}

	for _, id := range []wire.Identity{toast, known} {
		if rec, err := c.ReportStartFailure(ctx, api.Identity(id), "image polecat:1 is not among docker's images"); err != nil || rec.Identity != api.Identity(id) {
			t.Fatalf("reporting %s: %+v, %v", id, rec, err)
		}
	}
	st, err := c.Status(ctx)
	if err != nil || len(st.StartFailures) != 2 {
		t.Fatalf("status: %+v, %v; want both failures", st.StartFailures, err)
	}
	cases := []struct {
		id            wire.Identity
		state, reason string
	}{
		{toast, "dead", "never connected: hostd run could not start it"}, // never connected
		{known, "", ""}, // the polecat's own state stays
	}
	for _, tc := range cases {
		det, err := c.Polecat(ctx, api.Identity(tc.id))
		if err != nil || det.StartFailure == nil || det.StartFailure.Reason != "image polecat:1 is not among docker's images" || det.State != tc.state || det.Reason != tc.reason {
			t.Errorf("detail of %s: %+v (failure %+v), %v", tc.id, det.Polecat, det.StartFailure, err)
		}
	}
	if cleared, err := c.ClearStartFailure(ctx, api.Identity(toast)); err != nil || !cleared {
		t.Fatalf("clearing: %v, %v", cleared, err)
	}
	if cleared, err := c.ClearStartFailure(ctx, api.Identity(toast)); err != nil || cleared {
		t.Fatalf("clearing again: %v, %v; want nothing to clear", cleared, err)
	}
	if _, err := c.Polecat(ctx, api.Identity(toast)); err == nil || !strings.Contains(err.Error(), "no polecat gastown/toast") {
		t.Errorf("detail once cleared: %v, want not seen", err)
	}
	if det, _ := c.Polecat(ctx, api.Identity(known)); det.StartFailure == nil {
		t.Error("clearing one polecat's failure cleared another's")
	}

	h := Handler(d.services())
	for _, tc := range []struct{ method, path, body, want string }{
		{"PUT", "/v1/polecats/gastown/-x/start-failure", `{"reason": "x"}`, "starts with '-'"},
		{"PUT", "/v1/polecats/gastown/toast/start-failure", `{"reason": "x", "ok": true}`, "unknown field"},
		{"PUT", "/v1/polecats/gastown/toast/start-failure", `{"reason": "` + strings.Repeat("x", 70<<10) + `"}`, "larger than"},
		{"PUT", "/v1/polecats/gastown/toast/start-failure", `not json`, "not the expected JSON"},
		{"DELETE", "/v1/polecats/gastown/-x/start-failure", ``, "starts with '-'"},
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(tc.method, tc.path, strings.NewReader(tc.body)))
		if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), tc.want) {
			t.Errorf("%s %s %.40s: %d %s; want 400 saying %q", tc.method, tc.path, tc.body, rec.Code, rec.Body, tc.want)
		}
	}
	if _, ok := d.failures[toast]; ok || len(d.failures) != 1 {
		t.Errorf("refused reports were recorded: %+v", d.failures)
	}
}
