package control

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/polecat-sidecar/sidecar/hostd/api"

	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// The data channel's calls on the fake daemon: what the HTTP layer does
// with them is what is tested here; the real transfers are in hostd/e2e.

func (f *fakeDaemon) Push(_ context.Context, id wire.Identity, progress func(api.SyncProgress)) (wire.SyncResult, error) {
	if progress != nil {
		for i := 1; i <= 3; i++ {
			progress(api.SyncProgress{Files: i, Bytes: int64(i) * 10, TotalFiles: 3, TotalBytes: 30})
			time.Sleep(300 * time.Millisecond)
		}
	}
	if id.Name != "n" {
		return wire.SyncResult{}, errors.New(id.String() + " is not connected")
	}
	return wire.SyncResult{Files: 2, Bytes: 10}, nil
}

func (f *fakeDaemon) Pull(_ context.Context, _ wire.Identity, o api.PullOptions, _ func(api.SyncProgress)) (wire.SyncResult, error) {
	f.dryRuns = append(f.dryRuns, o.DryRun)
	return wire.SyncResult{Changes: []wire.SyncChange{{Path: "a", Action: "merged"}}}, nil
}

func (f *fakeDaemon) Journal() ([]api.SyncRecord, error) {
	return []api.SyncRecord{{Polecat: "r/n", Op: "push"}}, nil
}

func (f *fakeDaemon) Status() api.SyncStatus { return api.SyncStatus{Include: []string{"results"}} }

func TestSyncAPI(t *testing.T) {
	d := &fakeDaemon{}
	h := Handler(d.services())
	cases := []struct {
		method, path string
		code         int
		check        func(body []byte) bool
	}{
		{"POST", "/v1/sync/r/n/push", 200, func(b []byte) bool { var r wire.SyncResult; return json.Unmarshal(b, &r) == nil && r.Files == 2 }},
		{"POST", "/v1/sync/r/other/push", 200, func(b []byte) bool {
			var r wire.SyncResult
			return json.Unmarshal(b, &r) == nil && r.Error == "r/other is not connected"
		}},
		{"POST", "/v1/sync/r/-bad/push", 400, nil},
		{"POST", "/v1/sync/r/n/pull?dry_run=1", 200, func(b []byte) bool { var r wire.SyncResult; return json.Unmarshal(b, &r) == nil && len(r.Changes) == 1 }},
		{"POST", "/v1/sync/r/n/pull", 200, nil},
		{"GET", "/v1/sync/log", 200, func(b []byte) bool { var r []api.SyncRecord; return json.Unmarshal(b, &r) == nil && len(r) == 1 }},
		{"GET", "/v1/sync/status", 200, func(b []byte) bool { var r api.SyncStatus; return json.Unmarshal(b, &r) == nil && len(r.Include) == 1 }},
		{"GET", "/v1/sync/r/n/push", http.StatusMethodNotAllowed, nil},
	}
	for _, c := range cases {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(c.method, c.path, nil))
		if rec.Code != c.code || (c.check != nil && !c.check(rec.Body.Bytes())) {
			t.Errorf("%s %s: %d %s", c.method, c.path, rec.Code, rec.Body.String())
		}
	}
	if len(d.dryRuns) != 2 || !d.dryRuns[0] || d.dryRuns[1] {
		t.Errorf("dry runs passed on as %v, want [true false]", d.dryRuns)
	}

	// With progress=1 the answer is progress lines, the result last.
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("POST", "/v1/sync/r/n/push?progress=1", nil))
	lines := strings.Split(strings.TrimSpace(rec.Body.String()), "\n")
	var last api.SyncLine
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &last); err != nil || last.Result == nil || last.Result.Files != 2 {
		t.Fatalf("last line %q, want the result", lines[len(lines)-1])
	}
	var first api.SyncLine
	if len(lines) < 2 || json.Unmarshal([]byte(lines[0]), &first) != nil || first.Progress == nil || first.Progress.TotalBytes != 30 {
		t.Errorf("progress lines %q", lines)
	}
}
