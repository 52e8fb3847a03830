//go:build k8s

package kube

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/polecat-sidecar/sidecar/hostd/api"
	"github.com/polecat-sidecar/sidecar/hostd/sandbox"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// TestSandboxLife: a sandbox made from the real polecat image runs as the
// spec says, its agent joins a real hostd with the token from the Secret;
// Inspect and List find it by its labels; with the token dropped, the
// pod deleted comes back with /work as it was, and the agent rejoins with
// the certificate it kept there; Remove leaves nothing.
func TestSandboxLife(t *testing.T) {
	c := newCluster(t)
	r := c.runtime(c.cfg)
	tw, url := c.hostd()
	id := wire.Identity{Rig: "gastown", Name: "furiosa"}
	name, obj := sandbox.Name(id), ObjectName(sandbox.Name(id))
	dir := c.volume(id)
	token := strings.TrimSpace(tw.Run("token", "create", id.String()))
	ctx := context.Background()
	spec := sandbox.Spec{Image: os.Getenv("K8S_POLECAT_IMAGE"), URL: url, Agent: "/usr/local/bin/gt-agent", BeatInterval: time.Second}

	start := time.Now()
	if err := r.Create(ctx, spec, tw.Dir, id, "home-1", token); err != nil {
		t.Fatal(err)
	}
	c.wait(2*time.Minute, "the sandbox's container running", func() (bool, string) {
		p := &corev1.Pod{}
		err := r.pods.get(ctx, PodName(obj), p)
		return err == nil && running(p), fmt.Sprint(err)
	})
	t.Logf("timing: Create to the pod's container running: %v", time.Since(start).Round(time.Millisecond))
	info, err := r.Inspect(ctx, name)
	if err != nil || !info.Running || !info.Exists || info.Town != tw.Dir || info.Polecat != id.String() || info.Home != "home-1" || info.Problem != "" {
		t.Errorf("Inspect: %+v", info)
	}
	st := tw.WaitStatus(time.Minute, func(st api.Status) bool { p, ok := polecat(st, "furiosa"); return ok && p.Connected })
	joined, _ := polecat(st, "furiosa")
	t.Logf("timing: Create to the agent joined: %v (%s from %s)", time.Since(start).Round(time.Millisecond), joined.Transport, joined.Remote)

	pod := &corev1.Pod{}
	if err = r.pods.get(ctx, PodName(obj), pod); err != nil {
		t.Fatal(err)
	}
	if got := c.kubectl("exec", pod.Name, "--", "id", "-u"); got != "1000" {
		t.Errorf("the pod runs as uid %s", got)
	}
	if got := c.kubectl("exec", pod.Name, "--", "grep", "CapEff", "/proc/self/status"); !strings.HasSuffix(got, "0000000000000000") {
		t.Errorf("the pod has capabilities: %s", got)
	}
	if pod.Spec.AutomountServiceAccountToken == nil || *pod.Spec.AutomountServiceAccountToken || pod.Labels[TownHashLabel] != TownHash(tw.Dir) {
		t.Errorf("pod %s: automount %v, labels %v", pod.Name, pod.Spec.AutomountServiceAccountToken, pod.Labels)
	}

	list, err := r.List(ctx, tw.Dir)
	if err != nil || len(list) != 1 || list[0].Name != name || list[0].Polecat != id || list[0].Home != "home-1" || !isUID(list[0].ID) {
		t.Fatalf("List: %+v, %v", list, err)
	}
	if other, err := r.List(ctx, tw.Dir+"-other"); err != nil || len(other) != 0 {
		t.Errorf("List of another town: %+v, %v", other, err)
	}
	if byID, err := r.Inspect(ctx, list[0].ID); err != nil || !byID.Running || byID.Polecat != id.String() {
		t.Errorf("Inspect by ID: %+v, %v", byID, err)
	}

	if err := r.DropToken(ctx, name); err != nil {
		t.Fatal(err)
	}
	if err := r.secrets.exists(ctx, obj); !notFound(err) {
		t.Errorf("the token's Secret after DropToken: %v", err)
	}
	c.kubectl("exec", pod.Name, "--", "sh", "-c", "echo kept > /work/marker")
	if fi, err := os.Stat(filepath.Join(dir, ".sidecar-agent", "client.crt")); err != nil {
		t.Errorf("the agent's certificate is not on the claim: %v", err)
	} else if st := fi.Sys().(*syscall.Stat_t); st.Uid != uid {
		t.Errorf("the agent's certificate on the claim is uid %d's", st.Uid)
	}

	start = time.Now()
	if err := r.pods.remove(ctx, pod.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	c.wait(2*time.Minute, "a new pod running", func() (bool, string) {
		p := &corev1.Pod{}
		err := r.pods.get(ctx, PodName(obj), p)
		return err == nil && p.UID != pod.UID && running(p), fmt.Sprint(err)
	})
	t.Logf("timing: pod deleted to its successor running: %v", time.Since(start).Round(time.Millisecond))
	st = tw.WaitStatus(time.Minute, func(st api.Status) bool {
		p, ok := polecat(st, "furiosa")
		return ok && p.Connected && p.Since.After(joined.Since)
	})
	back, _ := polecat(st, "furiosa")
	t.Logf("timing: pod deleted to the agent back: %v (%s from %s)", time.Since(start).Round(time.Millisecond), back.Transport, back.Remote)
	if back.CertSerial != joined.CertSerial {
		t.Errorf("the agent came back with certificate %s, not %s it kept on the claim", back.CertSerial, joined.CertSerial)
	}
	if got := c.kubectl("exec", PodName(obj), "--", "cat", "/work/marker"); got != "kept" {
		t.Errorf("/work/marker after the pod came back: %q", got)
	}

	start = time.Now()
	if err := r.Remove(ctx, name); err != nil {
		t.Fatal(err)
	}
	t.Logf("timing: Remove: %v", time.Since(start).Round(time.Millisecond))
	c.gone(r, name)
	if info, err := r.Inspect(ctx, name); err != nil || info.Exists {
		t.Errorf("Inspect after Remove: %+v, %v", info, err)
	}
	if err := r.Remove(ctx, name); err != nil {
		t.Errorf("Remove of no sandbox: %v", err)
	}
}

// TestProblems: a sandbox that cannot run says why in the cluster's
// words: an image not on the node (pull policy Never), a pod no node
// takes with its claim unbound, a pod a quota refuses; Create refuses a
// sandbox of a name already there and leaves it as it was.
func TestProblems(t *testing.T) {
	c := newCluster(t)
	ctx := context.Background()
	spec := sandbox.Spec{Image: "polecat-sidecar.invalid/none:1", URL: "https://" + c.nodeIP + ":9876", Agent: "/usr/local/bin/gt-agent"}
	r := c.runtime(c.cfg)

	badImage := wire.Identity{Rig: "gastown", Name: "nux"}
	c.volume(badImage)
	if err := r.Create(ctx, spec, "/town", badImage, "", "t"); err != nil {
		t.Fatal(err)
	}
	// Unschedulable may come first, until the claim binds.
	info := c.inspect(r, sandbox.Name(badImage), 2*time.Minute, "the image's problem", func(i sandbox.Info) bool { return strings.Contains(i.Problem, "ErrImageNeverPull") })
	if info.Running || !strings.Contains(info.Problem, "polecat-sidecar.invalid/none:1") {
		t.Errorf("bad image: %+v", info)
	}
	set, again := &appsv1.StatefulSet{}, &appsv1.StatefulSet{}
	if err := r.sets.get(ctx, ObjectName(sandbox.Name(badImage)), set); err != nil {
		t.Fatal(err)
	}
	if err := r.Create(ctx, spec, "/town", badImage, "", "t2"); err == nil || !strings.Contains(err.Error(), "is in namespace "+c.ns+" already") {
		t.Errorf("a second Create: %v", err)
	}
	if err := r.sets.get(ctx, set.Name, again); err != nil || again.UID != set.UID {
		t.Errorf("the failed Create touched the sandbox there: %v", err)
	}
	sec := &corev1.Secret{}
	if err := r.secrets.get(ctx, set.Name, sec); err != nil || string(sec.Data[tokenKey]) != "t" {
		t.Errorf("the failed Create touched the Secret there: %v, %q", err, sec.Data[tokenKey])
	}
	if err := r.Remove(ctx, sandbox.Name(badImage)); err != nil {
		t.Fatal(err)
	}
	c.gone(r, sandbox.Name(badImage))

	cfg := c.cfg
	cfg.NodeSelector = map[string]string{"polecat-kube-test": "no-such-node"}
	unplaced := wire.Identity{Rig: "gastown", Name: "slit"} // and no volume for its claim
	if err := c.runtime(cfg).Create(ctx, spec, "/town", unplaced, "", "t"); err != nil {
		t.Fatal(err)
	}
	info = c.inspect(r, sandbox.Name(unplaced), time.Minute, "unschedulable", func(i sandbox.Info) bool {
		return strings.Contains(i.Problem, "Unschedulable") && strings.Contains(i.Problem, "is Pending")
	})
	t.Logf("unschedulable: %s", info.Problem)

	if _, err := c.core.ResourceQuotas(c.ns).Create(ctx, &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "no-more-pods"},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("0")}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	refused := wire.Identity{Rig: "gastown", Name: "toast"}
	c.volume(refused)
	c.wait(time.Minute, "the quota counted", func() (bool, string) {
		q, err := c.core.ResourceQuotas(c.ns).Get(ctx, "no-more-pods", metav1.GetOptions{})
		return err == nil && q.Status.Hard != nil, fmt.Sprint(err)
	})
	if err := r.Create(ctx, spec, "/town", refused, "", "t"); err != nil {
		t.Fatal(err)
	}
	info = c.inspect(r, sandbox.Name(refused), time.Minute, "the quota's refusal", func(i sandbox.Info) bool { return strings.Contains(i.Problem, "FailedCreate") })
	if !strings.Contains(info.Problem, "exceeded quota") {
		t.Errorf("quota: %+v", info)
	}
	for _, id := range []wire.Identity{unplaced, refused} {
		if err := r.Remove(ctx, sandbox.Name(id)); err != nil {
			t.Fatal(err)
		}
		c.gone(r, sandbox.Name(id))
	}
}

// TestClusterChecks: what hostd doctor and hostd run ask before a
// sandbox is made: the API server's version, the namespace, the image
// on a node.
func TestClusterChecks(t *testing.T) {
	c := newCluster(t)
	r := c.runtime(c.cfg)
	ctx := context.Background()
	if v, err := r.ServerVersion(ctx); err != nil || !strings.HasPrefix(v, "v1.") {
		t.Errorf("ServerVersion: %q, %v", v, err)
	}
	if ok, err := r.NamespaceExists(ctx); err != nil || !ok {
		t.Errorf("NamespaceExists: %v, %v", ok, err)
	}
	other := c.cfg
	other.Namespace = c.ns + "-none"
	if ok, err := c.runtime(other).NamespaceExists(ctx); err != nil || ok {
		t.Errorf("NamespaceExists of none: %v, %v", ok, err)
	}
	for image, want := range map[string]bool{os.Getenv("K8S_POLECAT_IMAGE"): true, "polecat-sidecar.invalid/none:1": false} {
		if got, err := r.ImageExists(ctx, image); err != nil || got != want {
			t.Errorf("ImageExists(%s) = %v, %v; want %v", image, got, err, want)
		}
	}
}
