package ca

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"math/big"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/polecat-sidecar/sidecar/hostd/cli/clitest"
	"github.com/polecat-sidecar/sidecar/hostd/pki"
	"github.com/polecat-sidecar/sidecar/internal/unixsock/unixsocktest"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// TestCertCommands runs ca init, cert issue, token create, cert list and
// cert revoke in turn on one town, with hostd stopped and running, and
// checks what they print and write.
func TestCertCommands(t *testing.T) {
	t.Setenv("HOME", t.TempDir()) // no gt-proxy-server CA to adopt
	town, out := unixsocktest.Dir(t), filepath.Join(t.TempDir(), "creds")
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
		got, code := hostd.Run(t, town, "", st.args...)
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
	got, code := hostd.Run(t, town, "", "cert", "list", "--json")
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
	town, _ := clitest.StartHostd(t)
	if got, code := hostd.Run(t, town, "", "cert", "issue", "gastown/furiosa", "--out", t.TempDir()); code != 0 {
		t.Fatalf("cert issue: exit %d: %q", code, got)
	}
	if got, code := hostd.Run(t, town, "", "cert", "revoke", "gastown/furiosa"); code != 0 || !strings.HasSuffix(got, "closed 0 live tunnel(s)\n") {
		t.Fatalf("cert revoke: exit %d: %q", code, got)
	}
	got, code := hostd.Run(t, town, "", "cert", "revoke", "gastown/furiosa", "--json")
	var r revocation
	if err := json.Unmarshal([]byte(got), &r); code != 0 || err != nil || !r.HostdRunning || r.ClosedTunnels != 0 {
		t.Fatalf("cert revoke --json: exit %d, %v: %q; want hostd_running and 0 closed", code, err, got)
	}
}

// TestCertRevokeUnknownName: revoking a name the CA never issued is
// refused, as a typo, and leaves no revoked name behind; --force revokes
// it (a name only Gas Town's own tools issued); a serial nobody has is
// refused too.
func TestCertRevokeUnknownName(t *testing.T) {
	town := unixsocktest.Dir(t)
	if _, _, err := pki.Init(pki.Dir(town), ""); err != nil {
		t.Fatal(err)
	}
	if got, code := hostd.Run(t, town, "", "cert", "issue", "gastown/furiosa", "--out", t.TempDir()); code != 0 {
		t.Fatalf("cert issue: exit %d: %q", code, got)
	}
	nobody := wire.Identity{Rig: "gastown", Name: "furiosaa"}
	for _, tc := range []struct {
		name    string
		args    []string
		code    int
		want    string
		revoked bool // nobody is revoked afterwards
	}{
		{"typo", []string{"gastown/furiosaa"}, 1, "hostd: this town's CA never issued a certificate to gastown/furiosaa and no running hostd has seen it connect, so nothing was revoked: check the name ('hostd cert list' shows those issued, 'hostd status' those connected); to revoke a name only Gas Town's own tools issued, add --force\n", false},
		{"typo, JSON asked", []string{"gastown/furiosaa", "--json"}, 1, "hostd: this town's CA never issued a certificate to gastown/furiosaa", false},
		{"unknown serial", []string{"abcdef"}, 1, `hostd: no certificate matches "abcdef" (see 'hostd cert list')`, false},
		{"forced", []string{"gastown/furiosaa", "--force"}, 0, "revoked every certificate of gastown/furiosaa issued until now\nhostd is not running; the revocation applies when it starts\n", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, code := hostd.Run(t, town, "", append([]string{"cert", "revoke"}, tc.args...)...)
			if code != tc.code || !strings.HasPrefix(got, tc.want) {
				t.Fatalf("exit %d, %q; want %d and %q", code, got, tc.code, tc.want)
			}
			c, err := pki.Open(pki.Dir(town), "")
			if err != nil {
				t.Fatal(err)
			}
			r, err := c.Revocations()
			if _, revoked := r.Identities[nobody]; err != nil || revoked != tc.revoked {
				t.Errorf("gastown/furiosaa revoked: %v (%v), want %v", revoked, err, tc.revoked)
			}
		})
	}
}

// TestCertRevokeGasTownCertificate: a polecat whose certificate Gas
// Town's own tools issued from the CA (so the CA recorded no name) and
// that a running hostd has seen connect is revoked without --force, its
// tunnel closed.
func TestCertRevokeGasTownCertificate(t *testing.T) {
	town, addr := clitest.StartHostd(t)
	ca, err := pki.Open(pki.Dir(town), "")
	if err != nil {
		t.Fatal(err)
	}
	toast := wire.Identity{Rig: "gastown", Name: "toast"}
	clitest.ConnectWith(t, ca, addr, gasTownCert(t, town, toast))
	clitest.WaitConnected(t, town, toast)
	if issued, _ := ca.Issued(toast); issued {
		t.Fatal("the CA recorded a certificate it did not issue")
	}
	got, code := hostd.Run(t, town, "", "cert", "revoke", "gastown/toast")
	if code != 0 || !strings.HasSuffix(got, "revoked every certificate of gastown/toast issued until now\nclosed 1 live tunnel(s)\n") {
		t.Fatalf("cert revoke: exit %d, %q; want the revocation and its tunnel closed", code, got)
	}
}

// gasTownCert is a certificate for id signed with town's CA key the way
// Gas Town's own tools sign one: nothing recorded beside the CA.
func gasTownCert(t *testing.T, town string, id wire.Identity) tls.Certificate {
	t.Helper()
	keyPEM, err := os.ReadFile(filepath.Join(pki.Dir(town), pki.KeyFile))
	if err != nil {
		t.Fatal(err)
	}
	caKey, err := pki.ParseKeyPEM(keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := pki.Open(pki.Dir(town), "")
	if err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: id.CommonName()},
		URIs:         []*url.URL{id.URI(ca.TrustDomain)},
		NotBefore:    time.Now().Add(-time.Minute),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, key.Public(), caKey)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}
}

// TestCertJSON: cert issue, token create and cert revoke each print one
// JSON object with --json, naming what they made, where and until when.
func TestCertJSON(t *testing.T) {
	town, dir := unixsocktest.Dir(t), t.TempDir()
	if _, _, err := pki.Init(pki.Dir(town), ""); err != nil {
		t.Fatal(err)
	}
	furiosa := wire.Identity{Rig: "gastown", Name: "furiosa"}
	start := time.Now().Truncate(time.Second)
	one := func(args ...string) string {
		t.Helper()
		got, code := hostd.Run(t, town, "", args...)
		if code != 0 || strings.Count(got, "\n") != 1 || !json.Valid([]byte(got)) {
			t.Fatalf("hostd %v: exit %d, %q; want one JSON object", args, code, got)
		}
		return got
	}
	var issued issuedFiles
	_ = json.Unmarshal([]byte(one("cert", "issue", "gastown/furiosa", "--ttl", "2h", "--out", dir, "--json")), &issued)
	recs, _ := pki.Open(pki.Dir(town), "")
	all, _ := recs.Records()
	if len(all) != 1 || issued.Identity != furiosa || issued.Serial != all[0].Serial || !issued.NotAfter.Equal(all[0].NotAfter) ||
		issued.Cert != filepath.Join(dir, "client.crt") || issued.Key != filepath.Join(dir, "client.key") || issued.CA != filepath.Join(dir, "ca.crt") {
		t.Errorf("cert issue --json: %+v; records %+v", issued, all)
	}
	var tok joinToken
	_ = json.Unmarshal([]byte(one("token", "create", "gastown/nux", "--ttl", "10m", "--json")), &tok)
	if _, err := wire.ParseJoinToken(tok.Token); err != nil || tok.Identity.Name != "nux" || tok.Expires.Before(start.Add(10*time.Minute)) || tok.Expires.After(time.Now().Add(10*time.Minute)) {
		t.Errorf("token create --json: %+v (%v)", tok, err)
	}
	var rev revocation
	_ = json.Unmarshal([]byte(one("cert", "revoke", "gastown/furiosa", "--json")), &rev)
	if rev.Identity == nil || *rev.Identity != furiosa || len(rev.Revoked) != 1 || rev.Revoked[0].Serial != issued.Serial || rev.Revoked[0].RevokedAt == nil || rev.HostdRunning {
		t.Errorf("cert revoke --json: %+v", rev)
	}
	var bySerial revocation
	_ = json.Unmarshal([]byte(one("cert", "revoke", issued.Serial, "--json")), &bySerial)
	if bySerial.Identity != nil || bySerial.Serial != issued.Serial || len(bySerial.Revoked) != 1 {
		t.Errorf("cert revoke <serial> --json: %+v", bySerial)
	}
}

// TestCertIssueHelp: cert issue's help states the name rule Validate
// applies.
func TestCertIssueHelp(t *testing.T) {
	got, _ := hostd.Run(t, t.TempDir(), "", "cert", "issue", "--help")
	if !strings.Contains(got, wire.NameRule) {
		t.Errorf("cert issue --help does not state the name rule %q:\n%s", wire.NameRule, got)
	}
}
