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
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/polecat-sidecar/sidecar/hostd/api"

	"github.com/polecat-sidecar/sidecar/hostd/state"
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
