package kube

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/polecat-sidecar/sidecar/tunnel/tunneltest"
)

// kubeconfig writes a kubeconfig whose context ctx (the current one) puts
// its user on the API server at server, in namespace ns ("" for none).
func kubeconfig(t *testing.T, server, ctx, ns string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "kubeconfig")
	body := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: %q, insecure-skip-tls-verify: true}
users:
- name: u
  user: {token: not-a-real-one}
contexts:
- name: %s
  context: {cluster: c, user: u, namespace: %q}
current-context: %s
`, server, ctx, ns, ctx)
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestNew: the kubeconfig and its context are read at New, the namespace
// taken from the settings, else the context, else default; a kubeconfig
// or context that is not there, or a setting Kubernetes would refuse,
// fails New naming it.
func TestNew(t *testing.T) {
	cfg := func(kc, ctx, ns string) Config {
		c := DefaultConfig()
		c.Kubeconfig, c.Context, c.Namespace = kc, ctx, ns
		return c
	}
	withNS := kubeconfig(t, "https://127.0.0.1:1", "k8s-local", "polecats")
	noNS := kubeconfig(t, "https://127.0.0.1:1", "k8s-local", "")
	for _, tt := range []struct {
		name   string
		cfg    Config
		ns     string
		errHas string
	}{
		{name: "the context's namespace", cfg: cfg(withNS, "", ""), ns: "polecats"},
		{name: "the setting's namespace", cfg: cfg(withNS, "k8s-local", "mine"), ns: "mine"},
		{name: "default", cfg: cfg(noNS, "", ""), ns: "default"},
		{name: "no kubeconfig", cfg: cfg(filepath.Join(t.TempDir(), "none"), "", ""), errHas: "reading the kubeconfig (sandbox.kubernetes.kubeconfig"},
		{name: "no such context", cfg: cfg(withNS, "prod", ""), errHas: `context "prod"`},
		{name: "a bad setting", cfg: func() Config { c := cfg(withNS, "", ""); c.PullPolicy = "never"; return c }(), errHas: `sandbox.kubernetes: PullPolicy is "never"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r, err := New(tt.cfg)
			if tt.errHas != "" {
				if err == nil || !strings.Contains(err.Error(), tt.errHas) {
					t.Fatalf("New: %v, want an error saying %q", err, tt.errHas)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if r.Namespace() != tt.ns || r.Name() != "kubernetes" || r.Server() != "https://127.0.0.1:1" {
				t.Errorf("namespace %q, name %q, server %q; want namespace %q", r.Namespace(), r.Name(), r.Server(), tt.ns)
			}
		})
	}
}

// TestNotAnswering: an API server that does not answer is an error naming
// it and what was being asked, for every call; Remove and Inspect do not
// take it for a sandbox that is not there.
func TestNotAnswering(t *testing.T) {
	server := "https://" + tunneltest.FreeAddr(t)
	c := DefaultConfig()
	c.Kubeconfig = kubeconfig(t, server, "k8s-local", "polecats")
	r, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ctx := context.Background()
	_, verr := r.ServerVersion(ctx)
	_, ierr := r.Inspect(ctx, "gt-gastown-furiosa")
	_, lerr := r.List(ctx, "/town")
	rerr := r.Remove(ctx, "gt-gastown-furiosa")
	for what, err := range map[string]error{"version": verr, "inspect": ierr, "list": lerr, "remove": rerr} {
		if err == nil || !strings.Contains(err.Error(), "API server "+server+", namespace polecats") || !strings.Contains(err.Error(), "connection refused") {
			t.Errorf("%s: %v", what, err)
		}
	}
}
