package control

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/polecat-sidecar/sidecar/hostd/api"

	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// TestAdminAPI: gt-proxy-server's admin calls, as its scripts send them,
// and hostile bodies refused with a reason and nothing done.
func TestAdminAPI(t *testing.T) {
	d := &fakeDaemon{}
	h := Handler(d.services())
	call := func(method, path, body string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(method, path, strings.NewReader(body)))
		return rec
	}
	if rec := call("GET", "/v1/admin/health", ""); rec.Code != http.StatusOK {
		t.Errorf("health: %d", rec.Code)
	}
	rec := call("POST", "/v1/admin/issue-cert", `{"rig": "gastown", "name": "bullet-farmer", "ttl": "720h"}`)
	var got api.IssuedCert
	if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &got) != nil || got.CN != "gt-gastown-bullet-farmer" {
		t.Fatalf("issue-cert: %d %s", rec.Code, rec.Body)
	}
	if len(d.issued) != 1 || d.issued[0] != (wire.Identity{Rig: "gastown", Name: "bullet-farmer"}) || d.ttls[0] != 720*time.Hour {
		t.Errorf("issued %v %v", d.issued, d.ttls)
	}
	if rec := call("POST", "/v1/admin/issue-cert", `{"rig": "gastown", "name": "nux"}`); rec.Code != http.StatusOK || d.ttls[1] != 0 {
		t.Errorf("issue-cert without ttl: %d, ttl %v", rec.Code, d.ttls)
	}
	if rec := call("POST", "/v1/admin/deny-cert", `{"serial": "abc"}`); rec.Code != http.StatusNoContent || len(d.revoked) != 1 {
		t.Errorf("deny-cert: %d %s", rec.Code, rec.Body)
	}

	hostile := []struct{ path, body, want string }{
		{"/v1/admin/issue-cert", `{"rig": "gastown", "name": "-x"}`, "starts with '-'"},
		{"/v1/admin/issue-cert", `{"rig": "../..", "name": "x"}`, "rig"},
		{"/v1/admin/issue-cert", `{"rig": "gastown"}`, "polecat name is empty"},
		{"/v1/admin/issue-cert", `{"rig": "gastown", "name": "x", "ttl": "forever"}`, "not a positive duration"},
		{"/v1/admin/issue-cert", `{"rig": "gastown", "name": "x", "ttl": "-1h"}`, "not a positive duration"},
		{"/v1/admin/issue-cert", `{"rig": "gastown", "name": "x", "admin": true}`, "unknown field"},
		{"/v1/admin/issue-cert", `{"rig": "gastown", "name": "x"} {}`, "after the JSON"},
		{"/v1/admin/issue-cert", `not json`, "not the expected JSON"},
		{"/v1/admin/issue-cert", `{"rig": "` + strings.Repeat("a", 70<<10) + `"}`, "larger than"},
		{"/v1/admin/deny-cert", `{}`, "serial is required"},
		{"/v1/admin/deny-cert", `{"serial": "ffff"}`, "no certificate matches"},
	}
	for _, c := range hostile {
		rec := call("POST", c.path, c.body)
		if rec.Code < 400 || !strings.Contains(rec.Body.String(), c.want) {
			t.Errorf("%s %.60s: %d %s; want a refusal saying %q", c.path, c.body, rec.Code, rec.Body, c.want)
		}
	}
	if len(d.issued) != 2 || len(d.revoked) != 1 {
		t.Errorf("hostile requests did something: issued %v, revoked %v", d.issued, d.revoked)
	}
}

// FuzzAdminBody: the admin API's parser never accepts more than one
// bounded JSON object of the expected shape.
func FuzzAdminBody(f *testing.F) {
	f.Add(`{"rig": "gastown", "name": "nux", "ttl": "24h"}`)
	f.Add(`{"serial": "abc"}`)
	f.Fuzz(func(t *testing.T, body string) {
		var req api.IssueCertRequest
		r := httptest.NewRequest("POST", "/v1/admin/issue-cert", strings.NewReader(body))
		if err := decodeBody(r, &req); err != nil {
			return
		}
		if len(body) > maxAdminBody {
			t.Fatalf("accepted a body of %d bytes", len(body))
		}
	})
}

// TestCheckLoopback: the admin API listens on loopback only.
func TestCheckLoopback(t *testing.T) {
	for _, tc := range []struct {
		addr string
		ok   bool
	}{
		{"127.0.0.1:9877", true},
		{"127.0.0.2:9877", true},
		{"[::1]:9877", true},
		{"localhost:9877", true},
		{"0.0.0.0:9877", false},
		{":9877", false},
		{"[::]:9877", false},
		{"10.0.0.1:9877", false},
		{"hostd.example:9877", false},
		{"127.0.0.1", false},
	} {
		if err := CheckLoopback(tc.addr); (err == nil) != tc.ok {
			t.Errorf("%s: %v, want ok=%v", tc.addr, err, tc.ok)
		}
	}
	if _, err := ListenAdmin("0.0.0.0:0"); err == nil || !strings.Contains(err.Error(), "not a loopback address") {
		t.Errorf("ListenAdmin on every address: %v", err)
	}
	ln, err := ListenAdmin("localhost:0")
	if err != nil {
		t.Fatalf("ListenAdmin on localhost: %v", err)
	}
	ln.Close()
}

// TestAdminHandler: the admin listener's handler answers the admin paths
// and nothing else of the control API.
func TestAdminHandler(t *testing.T) {
	d := &fakeDaemon{}
	h := AdminHandler(d)
	for _, tc := range []struct {
		method, path, body string
		code               int
	}{
		{"GET", "/v1/admin/health", "", http.StatusOK},
		{"POST", "/v1/admin/issue-cert", `{"rig":"gastown","name":"nux"}`, http.StatusOK},
		{"GET", "/v1/status", "", http.StatusNotFound},
		{"POST", "/v1/revocations/reload", "", http.StatusNotFound},
		{"POST", "/v1/nudges/gastown/nux", `{"text":"x"}`, http.StatusNotFound},
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(tc.method, tc.path, strings.NewReader(tc.body)))
		if rec.Code != tc.code {
			t.Errorf("%s %s: %d, want %d", tc.method, tc.path, rec.Code, tc.code)
		}
	}
	if d.reloads != 0 || len(d.nudges) != 0 || len(d.issued) != 1 {
		t.Errorf("the admin listener reached more than the admin API: %+v", d)
	}
}
