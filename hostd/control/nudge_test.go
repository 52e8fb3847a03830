package control

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/polecat-sidecar/sidecar/hostd/api"

	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

func (f *fakeDaemon) Nudge(_ context.Context, id wire.Identity, req api.NudgeRequest) (api.NudgeOutcome, error) {
	f.nudges = append(f.nudges, req)
	return api.NudgeOutcome{ID: "n1", Polecat: api.Identity(id), Outcome: "queued"}, nil
}

func (f *fakeDaemon) List(id wire.Identity) []api.NudgeItem {
	return []api.NudgeItem{{ID: "n1", Polecat: api.Identity(id), Text: "hi"}}
}

func (f *fakeDaemon) Cancel(id string) (api.NudgeOutcome, error) {
	if id != "n1" {
		return api.NudgeOutcome{}, errors.New("no queued nudge " + id)
	}
	return api.NudgeOutcome{ID: id, Outcome: "cancelled"}, nil
}

// TestNudgeAPI: requests are decoded strictly and bounded; a bad polecat
// name, an unknown field, an oversized body or a polecat hostd never heard
// of (never connected, never issued) is refused before the queue sees it.
func TestNudgeAPI(t *testing.T) {
	d := &fakeDaemon{}
	h := Handler(d.services())
	for _, tc := range []struct {
		name, method, path, body string
		code                     int
		queued                   int
	}{
		{"queued", "POST", "/v1/nudges/gastown/furiosa", `{"text":"go on; -x","mode":"queue","ttl":60000000000}`, 200, 1},
		{"bad name", "POST", "/v1/nudges/gastown/Furiosa%20X", `{"text":"x"}`, 400, 1},
		{"unknown field", "POST", "/v1/nudges/gastown/furiosa", `{"text":"x","identity":"other"}`, 400, 1},
		{"oversized", "POST", "/v1/nudges/gastown/furiosa", `{"text":"` + strings.Repeat("a", maxNudgeBody) + `"}`, 400, 1},
		{"not json", "POST", "/v1/nudges/gastown/furiosa", `text=x`, 400, 1},
		{"never heard of", "POST", "/v1/nudges/gastown/nobody", `{"text":"x"}`, 404, 1},
		{"connected, certificate not recorded", "POST", "/v1/nudges/r/n", `{"text":"x"}`, 200, 2},
		{"list", "GET", "/v1/nudges/gastown/furiosa", ``, 200, 2},
		{"cancel", "DELETE", "/v1/nudges/n1", ``, 200, 2},
		{"cancel unknown", "DELETE", "/v1/nudges/n2", ``, 404, 2},
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(tc.method, tc.path, strings.NewReader(tc.body)))
		if rec.Code != tc.code || len(d.nudges) != tc.queued {
			t.Errorf("%s: %d (queued %d), want %d (queued %d): %s", tc.name, rec.Code, len(d.nudges), tc.code, tc.queued, rec.Body)
		}
	}
	if got := d.nudges[0]; got.Text != "go on; -x" || got.Mode != "queue" || got.TTL.Seconds() != 60 {
		t.Errorf("the request reached the queue as %+v", got)
	}
	var o api.NudgeOutcome
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("DELETE", "/v1/nudges/n1", nil))
	if err := json.Unmarshal(rec.Body.Bytes(), &o); err != nil || o.Outcome != "cancelled" {
		t.Errorf("cancel answered %s", rec.Body)
	}
}
