package ca

import (
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/polecat-sidecar/sidecar/hostd/cli/clitest"
	"github.com/polecat-sidecar/sidecar/hostd/pki"
	"github.com/polecat-sidecar/sidecar/hostd/state"
)

// hostd is hostd's root command over this package's commands.
var hostd = clitest.Of(NewCACmd, NewCertCmd, NewTokenCmd)

// TestCAInit: a town without a CA adopts gt-proxy-server's from where it
// keeps it, or from --from; with --new, or with none to adopt, it gets a
// new one and is told where hostd looked. Whichever, hostd's runtime
// directory, where config.yaml goes, is there afterwards (0700), and
// named.
func TestCAInit(t *testing.T) {
	for _, tc := range []struct {
		name      string
		proxyCA   bool
		townCA    bool // the town has one, as Gas Town's proxy left it
		args      []string
		code      int
		want      string
		sameAsGas bool
	}{
		{"adopts gt-proxy-server's", true, false, nil, 0, "adopted the CA of ", true},
		{"--new ignores it", true, false, []string{"--new"}, 0, "created CA Gas Town polecat CA", false},
		{"--from another directory", false, false, []string{"--from", "FROM"}, 0, "adopted the CA of ", true},
		{"--from without a CA", false, false, []string{"--from", "EMPTY"}, 1, "no CA at ", false},
		{"none to adopt", false, false, nil, 0, "created CA (none in the town, nor gt-proxy-server's at HOME/gt/.runtime/ca", false},
		{"reuses the town's", false, true, nil, 0, "reusing existing CA", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			home, town := t.TempDir(), t.TempDir()
			t.Setenv("HOME", home)
			gas := filepath.Join(home, "gt", ".runtime", "ca")
			if !tc.proxyCA {
				gas = filepath.Join(t.TempDir(), "elsewhere")
			}
			if _, _, err := pki.Init(gas, ""); err != nil {
				t.Fatal(err)
			}
			if tc.townCA {
				if _, _, err := pki.Init(pki.Dir(town), ""); err != nil {
					t.Fatal(err)
				}
			}
			args := []string{"ca", "init"}
			for _, a := range tc.args {
				a = strings.NewReplacer("FROM", gas, "EMPTY", t.TempDir()).Replace(a)
				args = append(args, a)
			}
			out, code := hostd.Run(t, town, "", args...)
			if want := strings.ReplaceAll(tc.want, "HOME", home); code != tc.code || !strings.Contains(out, want) {
				t.Fatalf("exit %d, %q; want %d and %q", code, out, tc.code, want)
			}
			if code != 0 {
				return
			}
			checkRuntimeDir(t, town, out)
			mine, _ := os.ReadFile(filepath.Join(pki.Dir(town), pki.CertFile))
			theirs, _ := os.ReadFile(filepath.Join(gas, pki.CertFile))
			if same := string(mine) == string(theirs); same != tc.sameAsGas {
				t.Errorf("the town's CA is gt-proxy-server's: %v, want %v", same, tc.sameAsGas)
			}
		})
	}
}

// checkRuntimeDir fails t unless town's hostd runtime directory exists,
// 0700, and out names config.yaml in it.
func checkRuntimeDir(t *testing.T, town, out string) {
	t.Helper()
	rt := state.For(town)
	if st, err := os.Stat(rt.Path()); err != nil || !st.IsDir() || st.Mode().Perm() != 0o700 {
		t.Errorf("after ca init, %s: %v, %v; want a directory, 0700", rt.Path(), st, err)
	}
	if !strings.Contains(out, rt.Config()) {
		t.Errorf("ca init does not say where config.yaml goes (%s):\n%s", rt.Config(), out)
	}
}

// TestCAInitJSON: ca init --json prints one object saying what it did
// (created, reused, adopted and from where) and which CA the town has.
func TestCAInitJSON(t *testing.T) {
	t.Setenv("HOME", t.TempDir()) // no gt-proxy-server CA
	town, other := t.TempDir(), filepath.Join(t.TempDir(), "ca")
	if _, _, err := pki.Init(other, ""); err != nil {
		t.Fatal(err)
	}
	adopting := t.TempDir()
	for _, tc := range []struct {
		name, town string
		args       []string
		action     string
		from       string
	}{
		{"created", town, []string{"--new"}, "created", ""},
		{"reused", town, nil, "reused", ""},
		{"adopted", adopting, []string{"--from", other}, "adopted", other},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, code := hostd.Run(t, tc.town, "", append([]string{"ca", "init", "--json"}, tc.args...)...)
			var got caInit
			if err := json.Unmarshal([]byte(out), &got); code != 0 || err != nil || strings.Count(out, "\n") != 1 {
				t.Fatalf("exit %d, %v: %q; want one JSON object", code, err, out)
			}
			c, err := pki.Open(pki.Dir(tc.town), "")
			if err != nil {
				t.Fatal(err)
			}
			want := caInit{Action: tc.action, From: tc.from, Subject: c.Cert.Subject.CommonName, Cert: filepath.Join(pki.Dir(tc.town), pki.CertFile),
				Expires: c.Cert.NotAfter, SHA256: hex.EncodeToString(c.Fingerprint()), Config: state.For(tc.town).Config()}
			if !got.Expires.Equal(want.Expires) {
				t.Errorf("expires %v, want %v", got.Expires, want.Expires)
			}
			got.Expires = want.Expires
			if got != want {
				t.Errorf("got %+v\nwant %+v", got, want)
			}
		})
	}
}
