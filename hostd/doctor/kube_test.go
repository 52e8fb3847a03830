package doctor

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/polecat-sidecar/sidecar/hostd/sandbox/kube"
	"github.com/polecat-sidecar/sidecar/hostd/sandbox/runtimes"
	"github.com/polecat-sidecar/sidecar/internal/cli"
	"github.com/polecat-sidecar/sidecar/tunnel/tunneltest"
)

// apiServer is a stand-in Kubernetes API server (a cluster is outside the
// product, and slow to start): it answers /version, has namespace ns,
// and one node with image.
func apiServer(t *testing.T, ns, image string) string {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("/version", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, `{"major":"1","minor":"34","gitVersion":"v1.34.2"}`)
	})
	mux.HandleFunc("/api/v1/namespaces/{ns}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.PathValue("ns") != ns {
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprintf(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404,"message":"namespaces %q not found"}`, r.PathValue("ns"))
			return
		}
		fmt.Fprintf(w, `{"kind":"Namespace","apiVersion":"v1","metadata":{"name":%q}}`, ns)
	})
	mux.HandleFunc("/api/v1/nodes", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"kind":"NodeList","apiVersion":"v1","items":[{"metadata":{"name":"n"},"status":{"images":[{"names":[%q]}]}}]}`, image)
	})
	s := httptest.NewTLSServer(mux)
	t.Cleanup(s.Close)
	return s.URL
}

// kubeconfigFor writes a kubeconfig for the API server at server.
func kubeconfigFor(t *testing.T, server string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "kubeconfig")
	body := fmt.Sprintf("apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: %q, insecure-skip-tls-verify: true}}]\n"+
		"users: [{name: u, user: {token: t}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n", server)
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestKubernetes: the kubernetes runtime's lines: the API server answers
// and the namespace is there, the image on a node with pull policy
// Never; else what is wrong and the fix.
func TestKubernetes(t *testing.T) {
	server := apiServer(t, "polecats", "docker.io/library/polecat:v1")
	cfg := func(server, ns, policy string) runtimes.Config {
		c := runtimes.DefaultConfig()
		c.Name = "kubernetes"
		c.Kubernetes.Kubeconfig, c.Kubernetes.Namespace, c.Kubernetes.PullPolicy = kubeconfigFor(t, server), ns, policy
		return c
	}
	tests := []struct {
		name                       string
		cfg                        runtimes.Config
		image                      string
		rtStatus, imgStatus        Status
		rtWant, rtFix, imgWant, fx string
	}{
		{"all there", cfg(server, "polecats", "Never"), "polecat:v1", OK, OK, "answers; namespace polecats is there", "", "image polecat:v1 is on a node", ""},
		{"image pulled", cfg(server, "polecats", "IfNotPresent"), "polecat:v2", OK, OK, "(v1.34.2) answers", "", "the cluster pulls it (image_pull_policy IfNotPresent)", ""},
		{"image on no node", cfg(server, "polecats", "Never"), "polecat:v2", OK, Fail, "answers", "", "image polecat:v2 is on no node", "ctr -n k8s.io images import"},
		{"no image", cfg(server, "polecats", "Never"), "", OK, Warn, "answers", "", "no sandbox.image", "sandbox.image"},
		{"no namespace", cfg(server, "gone", "IfNotPresent"), "polecat:v1", Fail, OK, "namespace gone is not on the cluster", "kubectl create namespace gone", "pulls it", ""},
		{"not answering", cfg("https://"+tunneltest.FreeAddr(t), "polecats", "IfNotPresent"), "polecat:v1", Fail, OK, "the Kubernetes API server does not answer", "sandbox.kubernetes.kubeconfig", "pulls it", ""},
		{"a bad setting", func() runtimes.Config {
			c := cfg(server, "polecats", "Never")
			c.Kubernetes.StorageSize = "big"
			return c
		}(), "polecat:v1",
			Fail, Warn, `StorageSize is "big"`, "hostd config show", "not looked for", "see runtime"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lines := Sandboxes(context.Background(), tt.cfg, tt.image, "/usr/local/bin/gt-agent", cli.Build{Version: "dev"})
			if len(lines) != 2 {
				t.Fatalf("lines %+v", lines)
			}
			expect(t, lines[0], tt.rtStatus, tt.rtWant, tt.rtFix)
			expect(t, lines[1], tt.imgStatus, tt.imgWant, tt.fx)
		})
	}
}

// TestKubernetesRuntimeType: New builds the kubernetes runtime for that
// name alone.
func TestKubernetesRuntimeType(t *testing.T) {
	c := runtimes.DefaultConfig()
	c.Name, c.Kubernetes.Kubeconfig = "kubernetes", kubeconfigFor(t, "https://127.0.0.1:1")
	rt, err := runtimes.New(c)
	if err != nil {
		t.Fatal(err)
	}
	if k, ok := rt.(*kube.Runtime); !ok || k.Name() != "kubernetes" {
		t.Errorf("runtime %T", rt)
	} else {
		k.Close()
	}
}
