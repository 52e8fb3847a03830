package e2e

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/polecat-sidecar/sidecar/hostd/api"
	"github.com/polecat-sidecar/sidecar/hostd/state"
	"github.com/polecat-sidecar/sidecar/tunnel/tunneltest"
)

// writeGasTownCA writes a CA as Gas Town's gt-proxy-server writes one
// (internal/proxy/ca.go): EC P-256, SEC 1 "EC PRIVATE KEY", CN
// "GasTown CA", in <town>/.runtime/ca, key 0600.
func writeGasTownCA(t *testing.T, town string) []byte {
	dir := filepath.Join(town, ".runtime", "ca")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	serial, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: "GasTown CA"},
		NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(10 * 365 * 24 * time.Hour),
		IsCA: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, _ := x509.MarshalECPrivateKey(key)
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	if err := os.WriteFile(filepath.Join(dir, "ca.crt"), certPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "ca.key"), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certPEM
}

// adminCall sends one gt-proxy-server admin request to hostd's control
// socket, as 'curl --unix-socket' would.
func adminCall(t *testing.T, town, method, path string, body any) (int, []byte) {
	t.Helper()
	sock := state.For(town).Socket()
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}}
	var rd *bytes.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	} else {
		rd = bytes.NewReader(nil)
	}
	req, _ := http.NewRequest(method, "http://hostd"+path, rd)
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out bytes.Buffer
	_, _ = out.ReadFrom(resp.Body)
	return resp.StatusCode, out.Bytes()
}

// TestMigratingFromGasTownProxy: a town whose CA gt-proxy-server made is
// served as it is, and gt-proxy-server's admin calls (issue-cert,
// deny-cert, health) work on hostd's control socket, with revocation
// persisted and closing the live tunnel.
func TestMigratingFromGasTownProxy(t *testing.T) {
	tw := &Town{t: t, Dir: t.TempDir()}
	caPEM := writeGasTownCA(t, tw.Dir)
	if out := tw.Run("ca", "init"); !strings.Contains(out, "reus") {
		t.Errorf("ca init over Gas Town's CA: %s", out)
	}
	if b, _ := os.ReadFile(filepath.Join(tw.Dir, ".runtime", "ca", "ca.crt")); !bytes.Equal(b, caPEM) {
		t.Fatal("ca init replaced Gas Town's CA")
	}
	_, addr := tw.Serve()

	if code, body := adminCall(t, tw.Dir, "GET", "/v1/admin/health", nil); code != http.StatusOK {
		t.Fatalf("health: %d %s", code, body)
	}
	code, body := adminCall(t, tw.Dir, "POST", "/v1/admin/issue-cert", map[string]string{"rig": "gastown", "name": "bullet-farmer", "ttl": "2h"})
	var issued api.IssuedCert
	if code != http.StatusOK || json.Unmarshal(body, &issued) != nil || issued.CN != "gt-gastown-bullet-farmer" || issued.Serial == "" {
		t.Fatalf("issue-cert: %d %s", code, body)
	}
	if d := time.Until(issued.ExpiresAt); d < time.Hour || d > 3*time.Hour {
		t.Errorf("expires in %v, asked for 2h", d)
	}
	dir := t.TempDir()
	for name, data := range map[string]string{"client.crt": issued.Cert, "client.key": issued.Key, "ca.crt": issued.CA} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if issued.CA != string(caPEM) {
		t.Error("issue-cert answered another CA than Gas Town's")
	}
	agent := Start(t, AgentEnv(addr, dir), "gt-agent", "up")
	tw.WaitStatus(10*time.Second, Connected("bullet-farmer", ""))

	if code, body := adminCall(t, tw.Dir, "POST", "/v1/admin/deny-cert", map[string]string{"serial": issued.Serial}); code != http.StatusNoContent {
		t.Fatalf("deny-cert: %d %s", code, body)
	}
	tw.WaitStatus(5*time.Second, InState("bullet-farmer", "revoked"))
	if err := agent.Exited(t, 10*time.Second); err == nil {
		t.Error("the agent of a denied certificate exited 0")
	}
	if !strings.Contains(tw.Run("cert", "list"), "revoked") {
		t.Error("the denial is not persisted in the records")
	}
	if code, body := adminCall(t, tw.Dir, "POST", "/v1/admin/deny-cert", map[string]string{"serial": "ffff"}); code != http.StatusNotFound || !strings.Contains(string(body), "no certificate matches") {
		t.Errorf("unknown serial: %d %s", code, body)
	}
}

// The migration walk is the shell blocks between these markers in
// docs/migrating.md.
const (
	migratingStart = "<!-- migrating-walk"
	migratingEnd   = "<!-- /migrating-walk -->"
)

// TestMigratingWalk runs docs/migrating.md's steps as written (its
// migrating-walk blocks, in order) in a town as gt-proxy-server left it:
// ~/gt, its CA in ~/gt/.runtime/ca, the rig gastown's repository; with
// stand-ins for Gas Town's gt and bd first on PATH, and free ports for
// 9876, 9877 and 9878. Every command must succeed, and the walk must do
// what the page says: the CA reused as it was, config.yaml written where
// ca init made room for it and its listen taken by hostd serve, the
// agent on gt-proxy-client's variables, gt relayed as the polecat, the
// push landing in the rig's repository, and gt-proxy-server's admin call
// answered on the control socket and on admin_listen. The page's rig
// settings (JSON) and config.yaml blocks must be what hostd and Gas Town
// read. Its docker block is left to the container suite.
func TestMigratingWalk(t *testing.T) {
	t.Parallel()
	walk := docWalk(t, "../../docs/migrating.md", migratingStart, migratingEnd)
	hostdAddr, adminAddr, gitAddr := tunneltest.FreeAddr(t), tunneltest.FreeAddr(t), tunneltest.FreeAddr(t)
	_, hostdPort, _ := net.SplitHostPort(hostdAddr)
	for from, to := range map[string]string{`":9876"`: `"` + hostdAddr + `"`, "localhost:9876": "localhost:" + hostdPort,
		"127.0.0.1:9877": adminAddr, "127.0.0.1:9878": gitAddr} {
		if !strings.Contains(walk, from) {
			t.Fatalf("the walk no longer uses %s: update this test", from)
		}
		walk = strings.ReplaceAll(walk, from, to)
	}

	home, tmp := t.TempDir(), t.TempDir()
	town := filepath.Join(home, "gt")
	caPEM := writeGasTownCA(t, town)
	env := []string{"HOME=" + home, "TMPDIR=" + tmp, "TMUX_TMPDIR=" + tmp, "GIT_CONFIG_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0",
		"GT_AGENT_GIT_LISTEN=" + gitAddr, "GIT_SSL_CAINFO=/gt-proxy-client/ca.crt"}
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); !strings.HasPrefix(k, "HOSTD_") && !strings.HasPrefix(k, "GT_") && !strings.HasPrefix(k, "GIT_") &&
			k != "TMUX" && k != "HOME" && k != "TMPDIR" {
			env = append(env, kv)
		}
	}
	tools := t.TempDir()
	for _, name := range []string{"gt", "bd"} {
		standIn(t, filepath.Join(tools, name), `echo "host $(basename "$0"): $* (as $GT_ROLE)"`+"\n")
	}
	for i, kv := range env {
		if strings.HasPrefix(kv, "PATH=") {
			env[i] = "PATH=" + tools + string(os.PathListSeparator) + strings.TrimPrefix(kv, "PATH=")
		}
	}
	// This repository with bin/ as 'make build' leaves it, where the walk
	// starts, and the rig's repository, as gt rig add made it.
	repo := walkRepo(t, home)
	clone := exec.Command("git", "clone", "-q", "--bare", ".", filepath.Join(town, "gastown", ".repo.git"))
	clone.Dir, clone.Env = repo, append(GitEnv(home), "GIT_CONFIG_NOSYSTEM=1")
	if out, err := clone.CombinedOutput(); err != nil {
		t.Fatalf("git clone --bare: %v\n%s", err, out)
	}
	out := runWalk(t, walk, repo, env)
	for _, want := range []string{
		"reusing existing CA GasTown CA",
		"config:      " + state.For(town).Config(),
		"host gt: prime (as gastown/polecats/furiosa)",
		`"cn":"gt-gastown-rust"`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the walk does not show %q:\n%s", want, out)
		}
	}
	if n := strings.Count(out, `"cn":"gt-gastown-rust"`); n != 2 {
		t.Errorf("issue-cert answered %d times, want on the socket and on admin_listen:\n%s", n, out)
	}
	if b, _ := os.ReadFile(filepath.Join(town, ".runtime", "ca", "ca.crt")); !bytes.Equal(b, caPEM) {
		t.Error("the walk replaced gt-proxy-server's CA")
	}
	st, err := api.NewSocketClient(state.For(town).Socket()).Status(context.Background())
	if err != nil || st.Listen != hostdAddr {
		t.Errorf("hostd serve listens on %q (%v), want config.yaml's listen %s", st.Listen, err, hostdAddr)
	}
	if out, err := exec.Command("git", "--git-dir", filepath.Join(town, "gastown", ".repo.git"), "rev-parse", "--verify", "-q",
		"refs/heads/polecat/furiosa-migrated").CombinedOutput(); err != nil {
		t.Errorf("the polecat's push did not land in the rig's repository: %v\n%s", err, out)
	}
}

// TestMigratingConfigBlocks: the rig settings docs/migrating.md gives Gas
// Town name hostd run as the exec wrapper, in JSON Gas Town reads, and
// its config.yaml is one hostd takes, listen included.
func TestMigratingConfigBlocks(t *testing.T) {
	b, err := os.ReadFile("../../docs/migrating.md")
	if err != nil {
		t.Fatal(err)
	}
	jsons, yamls := fencedBlocks(string(b), "json"), fencedBlocks(string(b), "yaml")
	if len(jsons) != 1 || len(yamls) != 1 {
		t.Fatalf("docs/migrating.md has %d json and %d yaml blocks, want one each: update this test", len(jsons), len(yamls))
	}
	var rig struct {
		Type    string `json:"type"`
		Runtime struct {
			ExecWrapper []string `json:"exec_wrapper"`
		} `json:"runtime"`
	}
	if err := json.Unmarshal([]byte(jsons[0]), &rig); err != nil || rig.Type != "rig-settings" || strings.Join(rig.Runtime.ExecWrapper, " ") != "hostd run --" {
		t.Errorf("the rig settings block: %+v, %v\n%s", rig, err, jsons[0])
	}
	tw := &Town{t: t, Dir: t.TempDir()}
	config := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(config, []byte(yamls[0]), 0o600); err != nil {
		t.Fatal(err)
	}
	if out := tw.Run("config", "show", "--config", config); !regexp.MustCompile(`(?m)^listen +config file +:9876$`).MatchString(out) {
		t.Errorf("hostd config show of the page's config.yaml does not take its listen:\n%s", out)
	}
}
