package run_test

import (
	"crypto/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/polecat-sidecar/sidecar/hostd/cli/clitest"
	"github.com/polecat-sidecar/sidecar/hostd/pki"
	"github.com/polecat-sidecar/sidecar/internal/unixsock/unixsocktest"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// TestRunRefusesKubernetesSettings: with the kubernetes runtime, hostd
// run refuses, before it asks the cluster anything, a sandbox.url a pod
// cannot reach hostd at (loopback, a name, none), docker's own settings,
// a sandbox.kubernetes setting the cluster would refuse, and a
// sandbox.transport the agent would, each naming the setting; hostd
// status shows it.
func TestRunRefusesKubernetesSettings(t *testing.T) {
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"loopback", []string{"--url", "https://127.0.0.1:9876"}, nil,
			`sandbox.url "https://127.0.0.1:9876" is a loopback address: a pod's loopback is its own, not hostd's; set sandbox.url to hostd's address as the cluster's pods reach it`},
		{"a name", []string{"--url", "https://hostd.example:9876"}, nil, `sandbox.url "https://hostd.example:9876": the kubernetes runtime needs hostd's IP address, not a name`},
		{"no url", nil, nil, `sandbox.url "": want https://<hostd's IP address as the cluster's pods reach it>:<port>`},
		{"docker's memory", []string{"--url", "https://10.0.0.1:9876", "--memory", "2g"}, nil, "sandbox.memory is docker's and podman's: the kubernetes runtime takes sandbox.kubernetes.limits instead"},
		{"pull policy", []string{"--url", "https://10.0.0.1:9876"}, map[string]string{"HOSTD_SANDBOX_KUBERNETES_IMAGE_PULL_POLICY": "Sometimes"},
			`setting sandbox.kubernetes.image_pull_policy is "Sometimes" (env HOSTD_SANDBOX_KUBERNETES_IMAGE_PULL_POLICY): want one of Always, IfNotPresent, Never`},
		{"transport", []string{"--url", "https://10.0.0.1:9876", "--transport", "udp"}, nil, `sandbox.transport "udp": want auto, quic or tcp`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			town := unixsocktest.Dir(t)
			if _, _, err := pki.Init(pki.Dir(town), ""); err != nil {
				t.Fatal(err)
			}
			id := wire.Identity{Rig: "kube", Name: strings.ToLower(rand.Text()[:10])}
			if err := os.MkdirAll(filepath.Join(town, id.Rig, "polecats", id.Name), 0o755); err != nil {
				t.Fatal(err)
			}
			clitest.Serve(t, town)
			t.Setenv("GT_RIG", id.Rig)
			t.Setenv("GT_POLECAT", id.Name)
			t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "none")) // never read: the checks come first
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			args := append([]string{"run", "--runtime", "kubernetes", "--image", "polecat:v1"}, tt.args...)
			out, code := hostd.Run(t, town, "", append(args, "--", "claude")...)
			line := "hostd: " + id.String() + " not started: " + tt.want
			if code != 1 || !strings.HasPrefix(out, line) || strings.Count(out, "\n") != 1 {
				t.Fatalf("hostd run: exit %d, %q; want 1 and one line %q...", code, out, line)
			}
			hostd.Check(t, town, []clitest.Want{{Args: []string{"status"}, Code: 0, Out: " ago: " + tt.want}})
		})
	}
}
