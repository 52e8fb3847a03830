package doctor

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/polecat-sidecar/sidecar/hostd/pki"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// expect fails t unless l has status and its message (or, for fix, its
// fix) holds want.
func expect(t *testing.T, l Line, status Status, want, fix string) {
	t.Helper()
	if l.Status != status || !strings.Contains(l.Message, want) || !strings.Contains(l.Fix, fix) {
		t.Errorf("%s: %s %q (fix %q); want %s, a message with %q, a fix with %q", l.Check, l.Status, l.Message, l.Fix, status, want, fix)
	}
	if (l.Status == OK) != (l.Fix == "") {
		t.Errorf("%s: %s with fix %q: a fix goes with warn and fail alone", l.Check, l.Status, l.Fix)
	}
}

// newCA makes the town's CA and returns it.
func newCA(t *testing.T, town string) *pki.CA {
	t.Helper()
	ca, _, err := pki.Init(pki.Dir(town), "")
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestTown: a town is a directory Gas Town made (mayor/town.json); a
// directory without it is a warning, anything else a failure.
func TestTown(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "gt", "mayor", "town.json"), `{"type":"town"}`)
	writeFile(t, filepath.Join(dir, "file"), "")
	if err := os.Mkdir(filepath.Join(dir, "bare"), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		town      string
		status    Status
		want, fix string
	}{
		{"gt", OK, "/gt", ""},
		{"bare", Warn, "has no mayor/town.json", "gt install"},
		{"none", Fail, "no town at", "--town"},
		{"file", Fail, "is not a directory", "--town"},
	}
	for _, tt := range tests {
		t.Run(tt.town, func(t *testing.T) {
			expect(t, Town(filepath.Join(dir, tt.town)), tt.status, tt.want, tt.fix)
		})
	}
}

// TestCA: the town's CA is there, whole, its key private, and not at or
// near its end.
func TestCA(t *testing.T) {
	town, keyShown, noCA := t.TempDir(), t.TempDir(), t.TempDir()
	ca := newCA(t, town)
	newCA(t, keyShown)
	if err := os.Chmod(filepath.Join(pki.Dir(keyShown), pki.KeyFile), 0o644); err != nil {
		t.Fatal(err)
	}
	end := ca.Cert.NotAfter
	tests := []struct {
		name      string
		town      string
		now       time.Time
		status    Status
		want, fix string
	}{
		{"valid", town, time.Now(), OK, `"Gas Town polecat CA" until`, ""},
		{"none", noCA, time.Now(), Fail, "no CA at " + pki.Dir(noCA), "hostd ca init"},
		{"key readable by others", keyShown, time.Now(), Fail, "has mode -rw-r--r--", "mend"},
		{"ending in 10 days", town, end.Add(-10 * 24 * time.Hour), Warn, "in 10 days", "hostd ca init --new"},
		{"expired", town, end.Add(time.Hour), Fail, "expired on " + end.Format(time.DateOnly), "hostd ca init --new"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			expect(t, CA(tt.town, "", tt.now), tt.status, tt.want, tt.fix)
		})
	}
}

// TestProxyCA: gt-proxy-server's CA, when there is one, must be the
// town's; the town's own directory, or none, is fine.
func TestProxyCA(t *testing.T) {
	proxy := filepath.Join(t.TempDir(), "ca")
	if _, _, err := pki.Init(proxy, ""); err != nil {
		t.Fatal(err)
	}
	adopted, other, bare := t.TempDir(), t.TempDir(), t.TempDir()
	if _, err := pki.Adopt(proxy, pki.Dir(adopted), ""); err != nil {
		t.Fatal(err)
	}
	newCA(t, other)
	tests := []struct {
		name        string
		proxy, town string
		status      Status
		want, fix   string
	}{
		{"adopted", proxy, adopted, OK, "is the town's", ""},
		{"the town's own directory", pki.Dir(other), other, OK, "the town's CA directory", ""},
		{"none", filepath.Join(bare, "nothing"), other, OK, "none at", ""},
		{"another CA", proxy, other, Warn, "is not the town's", "hostd ca init --from " + proxy},
		{"the town has none", proxy, bare, Warn, "the town has none", "hostd ca init"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			expect(t, ProxyCA(tt.proxy, tt.town), tt.status, tt.want, tt.fix)
		})
	}
}

// TestClock: a clock before the CA's start, or before the newest
// certificate it issued, is behind; after both it passes.
func TestClock(t *testing.T) {
	town, fresh := t.TempDir(), t.TempDir()
	ca := newCA(t, town)
	newCA(t, fresh)
	if _, _, err := ca.NewClientKeyPair(wire.Identity{Rig: "gastown", Name: "furiosa"}, time.Hour); err != nil {
		t.Fatal(err)
	}
	recs, err := ca.Records()
	if err != nil || len(recs) != 1 {
		t.Fatalf("records: %v, %v", recs, err)
	}
	issued := recs[0].NotBefore
	tests := []struct {
		name   string
		town   string
		now    time.Time
		status Status
		want   string
	}{
		{"now", town, time.Now(), OK, "after the newest certificate"},
		{"nothing issued", fresh, time.Now(), OK, "issued nothing yet"},
		{"no CA", t.TempDir(), time.Now(), OK, "no CA to compare it with"},
		{"before the CA", town, ca.Cert.NotBefore.Add(-time.Minute), Fail, "before the CA's start"},
		{"before the newest certificate", town, issued.Add(-time.Second), Fail, "before the certificate the CA issued gastown/furiosa"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fix := ""
			if tt.status != OK {
				fix = "NTP"
			}
			expect(t, Clock(tt.town, "", tt.now), tt.status, tt.want, fix)
		})
	}
}
