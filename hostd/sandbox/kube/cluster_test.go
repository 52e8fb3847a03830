//go:build k8s

package kube

// The runtime against a real cluster (make test-k8s, on images/k8s-local):
// KUBECONFIG is its admin's, K8S_POLECAT_IMAGE the polecat image in its
// nodes' containerd (pull policy Never), K8S_LOCAL_NODE_IP the node's
// address, where the pods reach hostd (default 10.244.0.1), and KUBECTL
// the kubectl that runs commands in a pod.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/polecat-sidecar/sidecar/hostd/api"
	"github.com/polecat-sidecar/sidecar/hostd/e2e"
	"github.com/polecat-sidecar/sidecar/hostd/sandbox"
	"github.com/polecat-sidecar/sidecar/tunnel/tunneltest"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// TestMain builds hostd and gt-agent for the tests that join a real hostd,
// and fails the package when a goroutine outlives the tests.
func TestMain(m *testing.M) {
	for _, v := range []string{"KUBECONFIG", "K8S_POLECAT_IMAGE"} {
		if os.Getenv(v) == "" {
			fmt.Fprintf(os.Stderr, "the k8s tests need %s: run them with make test-k8s (after make k8s-local-up)\n", v)
			os.Exit(2)
		}
	}
	cleanup, err := e2e.Build()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	cleanup()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	os.Exit(code)
}

// storageClass names the hostPath volumes the tests make for their
// claims: the cluster has no provisioner.
const storageClass = "polecat-kube-test"

// cluster is one test's namespace on the cluster, the runtime there and
// a client to look behind it.
type cluster struct {
	t      *testing.T
	ns     string
	core   corev1client.CoreV1Interface
	cfg    Config
	nodeIP string
}

// newCluster makes a namespace for the test, deleted (with all in it)
// when the test ends.
func newCluster(t *testing.T) *cluster {
	t.Helper()
	rc, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(clientcmd.NewDefaultClientConfigLoadingRules(), nil).ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	hc, err := rest.HTTPClientFor(rc)
	if err != nil {
		t.Fatal(err)
	}
	// Last of the cleanups: the connections of client-go's shared transport.
	t.Cleanup(func() { utilnet.CloseIdleConnectionsFor(hc.Transport) })
	core, err := corev1client.NewForConfigAndClient(rc, hc)
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	c := &cluster{t: t, ns: "polecat-kube-" + hex.EncodeToString(b), core: core, nodeIP: os.Getenv("K8S_LOCAL_NODE_IP")}
	if c.nodeIP == "" {
		c.nodeIP = "10.244.0.1"
	}
	ctx := context.Background()
	if _, err := core.Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: c.ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = core.Namespaces().Delete(ctx, c.ns, metav1.DeleteOptions{})
		c.wait(2*time.Minute, "namespace "+c.ns+" gone", func() (bool, string) {
			_, err := core.Namespaces().Get(ctx, c.ns, metav1.GetOptions{})
			return notFound(err), fmt.Sprint(err)
		})
	})
	c.cfg = DefaultConfig()
	c.cfg.Namespace, c.cfg.PullPolicy, c.cfg.StorageClass, c.cfg.StorageSize = c.ns, "Never", storageClass, "1Gi"
	// A node lists an image imported a moment ago at its kubelet's next
	// status update.
	r := c.runtime(c.cfg)
	c.wait(time.Minute, "the node listing "+os.Getenv("K8S_POLECAT_IMAGE"), func() (bool, string) {
		ok, err := r.ImageExists(ctx, os.Getenv("K8S_POLECAT_IMAGE"))
		return ok, fmt.Sprint(err)
	})
	return c
}

// runtime is the runtime on the test's namespace with cfg's settings.
func (c *cluster) runtime(cfg Config) *Runtime {
	c.t.Helper()
	r, err := New(cfg)
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(r.Close)
	return r
}

// volume makes the hostPath volume the claim of id's sandbox binds to, a
// directory owned by the image's uid, and returns that directory.
func (c *cluster) volume(id wire.Identity) string {
	c.t.Helper()
	dir := filepath.Join(c.t.TempDir(), "pv")
	if err := os.Mkdir(dir, 0o755); err != nil {
		c.t.Fatal(err)
	}
	if err := os.Chown(dir, uid, uid); err != nil {
		c.t.Fatal(err)
	}
	name := c.ns + "-" + ObjectName(sandbox.Name(id))
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PersistentVolumeSpec{
		Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
		AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
		StorageClassName:              storageClass,
		ClaimRef:                      &corev1.ObjectReference{Namespace: c.ns, Name: ObjectName(sandbox.Name(id))},
		PersistentVolumeSource:        corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: dir}},
	}}
	ctx := context.Background()
	if _, err := c.core.PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { _ = c.core.PersistentVolumes().Delete(ctx, name, metav1.DeleteOptions{}) })
	return dir
}

// wait polls cond until it holds, failing the test with what it said
// last when it has not within d.
func (c *cluster) wait(d time.Duration, what string, cond func() (bool, string)) {
	c.t.Helper()
	deadline := time.Now().Add(d)
	for {
		ok, last := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("%s: not within %v; last: %s", what, d, last)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// inspect waits until sandbox name's Info satisfies cond and returns it.
func (c *cluster) inspect(r *Runtime, name string, d time.Duration, what string, cond func(sandbox.Info) bool) sandbox.Info {
	c.t.Helper()
	var info sandbox.Info
	c.wait(d, what, func() (bool, string) {
		var err error
		info, err = r.Inspect(context.Background(), name)
		return err == nil && cond(info), fmt.Sprintf("%+v, %v", info, err)
	})
	return info
}

// gone fails the test unless no object of the sandbox named name is left.
func (c *cluster) gone(r *Runtime, name string) {
	c.t.Helper()
	ctx, obj := context.Background(), ObjectName(name)
	for kind, err := range map[string]error{
		"StatefulSet":           r.sets.exists(ctx, obj),
		"Pod":                   r.pods.exists(ctx, PodName(obj)),
		"PersistentVolumeClaim": r.claims.exists(ctx, obj),
		"Secret":                r.secrets.exists(ctx, obj),
		"NetworkPolicy":         r.policies.exists(ctx, obj),
	} {
		if !notFound(err) {
			c.t.Errorf("%s %s is left: %v", kind, obj, err)
		}
	}
}

// kubectl runs kubectl with args in the test's namespace.
func (c *cluster) kubectl(args ...string) string {
	c.t.Helper()
	bin := os.Getenv("KUBECTL")
	if bin == "" {
		bin = "kubectl"
	}
	out, err := exec.Command(bin, append([]string{"-n", c.ns}, args...)...).CombinedOutput()
	if err != nil {
		c.t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// hostd runs a real hostd serve of a new town on the node's address, as
// the pods reach it, and returns the town and sandbox.url.
func (c *cluster) hostd() (*e2e.Town, string) {
	c.t.Helper()
	return c.hostdWith(e2e.NewTown(c.t))
}

// hostdWith runs hostd serve of town tw on the node's address.
func (c *cluster) hostdWith(tw *e2e.Town) (*e2e.Town, string) {
	c.t.Helper()
	addr := net.JoinHostPort(c.nodeIP, tunneltest.FreePort(c.t, c.nodeIP))
	// The agent waits this long for its first session, which no hostd run
	// starts here.
	tw.ServeOn(addr, "--grace", "10m")
	return tw, "https://" + addr
}

// polecat is the status row of name, if hostd has one.
func polecat(st api.Status, name string) (api.Polecat, bool) {
	for _, p := range st.Polecats {
		if p.Name == name {
			return p, true
		}
	}
	return api.Polecat{}, false
}
