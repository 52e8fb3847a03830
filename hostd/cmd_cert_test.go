package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/polecat-sidecar/sidecar/hostd/pki"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// TestCertCommands runs ca init, cert issue, token create, cert list and
// cert revoke in turn on one town, with hostd stopped and running, and
// checks what they print and write.
func TestCertCommands(t *testing.T) {
	t.Setenv("HOME", t.TempDir()) // no gt-proxy-server CA to adopt
	town, out := t.TempDir(), filepath.Join(t.TempDir(), "creds")
	steps := []struct {
		name string
		args []string
		want []string // each in the output, in order
	}{
		{"ca init creates", []string{"ca", "init"}, []string{"created CA", "certificate: " + pki.Dir(town)}},
		{"ca init reuses", []string{"ca", "init"}, []string{"reusing existing CA"}},
		{"cert issue", []string{"cert", "issue", "gastown/furiosa", "--ttl", "2h", "--out", out},
			[]string{"issued a certificate for gastown/furiosa, valid for 2h0m0s", "GT_PROXY_CERT=" + out + "/client.crt", "GT_PROXY_KEY=" + out + "/client.key", "GT_PROXY_CA=" + out + "/ca.crt"}},
		{"token create", []string{"token", "create", "gastown/nux", "--ttl", "1m"}, []string{"gtj1."}},
		{"cert list", []string{"cert", "list"}, []string{"POLECAT", "gastown/furiosa", "valid"}},
		{"cert revoke, hostd stopped", []string{"cert", "revoke", "gastown/furiosa"},
			[]string{"revoked every certificate of gastown/furiosa issued until now", "hostd is not running; the revocation applies when it starts"}},
	}
	for _, st := range steps {
		got, code := runHostd(t, town, "", st.args...)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", st.name, code, got)
		}
		rest := got
		for _, w := range st.want {
			i := strings.Index(rest, w)
			if i < 0 {
				t.Fatalf("%s: output %q lacks %q (in order)", st.name, got, w)
			}
			rest = rest[i+len(w):]
		}
	}
	for name, mode := range map[string]os.FileMode{"client.crt": 0o644, "client.key": 0o600, "ca.crt": 0o644} {
		if fi, err := os.Stat(filepath.Join(out, name)); err != nil || fi.Mode().Perm() != mode {
			t.Errorf("%s: %v, mode %v; want %v", name, err, fi.Mode().Perm(), mode)
		}
	}
	got, code := runHostd(t, town, "", "cert", "list", "--json")
	var rows []struct {
		Identity wire.Identity
		Status   string
	}
	if err := json.Unmarshal([]byte(got), &rows); code != 0 || err != nil || len(rows) != 1 || rows[0].Identity.String() != "gastown/furiosa" || rows[0].Status != "revoked" {
		t.Fatalf("cert list --json: exit %d, %v: %s", code, err, got)
	}
}

// TestCertRevokeTellsHostd: a running hostd hears of a revocation at once
// and says how many tunnels it closed.
func TestCertRevokeTellsHostd(t *testing.T) {
	town, _ := startHostd(t)
	if got, code := runHostd(t, town, "", "cert", "revoke", "gastown/furiosa"); code != 0 || !strings.HasSuffix(got, "closed 0 live tunnel(s)\n") {
		t.Fatalf("cert revoke: exit %d: %q", code, got)
	}
}
