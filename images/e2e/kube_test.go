//go:build e2e && gastown

package e2e

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/polecat-sidecar/sidecar/hostd/sandbox"
	"github.com/polecat-sidecar/sidecar/hostd/sandbox/kube"
	"github.com/polecat-sidecar/sidecar/tunnel/tunneltest"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// The Kubernetes half of the Gas Town suite ('make e2e-k8s'): the test
// cluster of images/k8s-local is up (the Makefile brings it up and down),
// and its variables name it:
//
//	E2E_KUBECTL     kubectl
//	E2E_KUBECONFIG  the cluster's admin kubeconfig
//	E2E_CONTAINERD  its containerd's socket, where images are imported
//	E2E_NODE_IP     the node's address, which pods reach the host at
const kubeEnvHelp = "run 'make e2e-k8s', which brings the test cluster up and sets E2E_KUBECTL, E2E_KUBECONFIG, E2E_CONTAINERD and E2E_NODE_IP"

// kubeVolumes is how many PersistentVolumes the suite makes for its
// sandboxes' claims: the cluster has no provisioner.
const kubeVolumes = 4

// newKubeBoxes readies the cluster for the suite's sandboxes: hostd's
// addresses on the node's address (which pods reach), the polecat image
// with the stand-in claude in it imported into the cluster's containerd
// (r.image becomes it), a namespace of the run's and volumes for its
// claims. All of it goes at the test's end.
func newKubeBoxes(t *testing.T, r *rig, rig string) kubeBoxes {
	env := map[string]string{}
	for _, k := range []string{"E2E_KUBECTL", "E2E_KUBECONFIG", "E2E_CONTAINERD", "E2E_NODE_IP"} {
		if env[k] = os.Getenv(k); env[k] == "" {
			t.Fatalf("%s is not set: %s", k, kubeEnvHelp)
		}
	}
	node := env["E2E_NODE_IP"]
	r.gateway = node
	r.addr = net.JoinHostPort(node, tunneltest.FreePort(t, node))
	r.metrics = net.JoinHostPort(node, tunneltest.FreePort(t, node))

	k := kubeBoxes{rig: rig, ns: "gs" + r.id, kubectl: []string{env["E2E_KUBECTL"], "--kubeconfig", env["E2E_KUBECONFIG"]},
		restarting: 2 * time.Minute}
	k.podOf, k.objectsOf = kubePod(rig), kubeObjects(rig)
	r.image = kubeImage(t, r, env["E2E_CONTAINERD"])
	// With pull policy Never hostd run looks for the image in the nodes'
	// statuses, which the kubelet refreshes every 10 s or so.
	eventually(t, time.Minute, "the node listing "+r.image, func() bool {
		argv := append(append([]string(nil), k.kubectl[1:]...), "get", "nodes", "-o", "jsonpath={.items[*].status.images[*].names}")
		out, _ := exec.Command(k.kubectl[0], argv...).Output()
		return strings.Contains(string(out), "/"+r.image+`"`)
	})

	must := func(args ...string) {
		t.Helper()
		argv := append(append([]string(nil), k.kubectl[1:]...), args...)
		if out, err := exec.Command(k.kubectl[0], argv...).CombinedOutput(); err != nil {
			t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	must("create", "namespace", k.ns)
	undo.push(func() {
		argv := append(append([]string(nil), k.kubectl[1:]...), "delete", "namespace", k.ns, "--wait=true", "--timeout=120s")
		_ = exec.Command(k.kubectl[0], argv...).Run()
	})
	class := "polecat-e2e-" + r.id
	dir := t.TempDir()
	var pvs strings.Builder
	for i := range kubeVolumes {
		path := filepath.Join(dir, fmt.Sprint(i))
		if err := os.Mkdir(path, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(path, 1000, 1000); err != nil { // the image's user; a hostPath volume keeps its owner
			t.Fatal(err)
		}
		fmt.Fprintf(&pvs, `---
apiVersion: v1
kind: PersistentVolume
metadata: {name: %s-%d, labels: {%s: "%s"}} # quoted: a run id of digits alone reads as a number
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteOnce]
  persistentVolumeReclaimPolicy: Delete
  storageClassName: %s
  hostPath: {path: %s, type: Directory}
`, class, i, label, r.id, class, path)
	}
	manifest := filepath.Join(dir, "volumes.yaml")
	if err := os.WriteFile(manifest, []byte(pvs.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	must("apply", "-f", manifest)
	undo.push(func() {
		argv := append(append([]string(nil), k.kubectl[1:]...), "delete", "pv", "-l", label+"="+r.id, "--wait=false")
		_ = exec.Command(k.kubectl[0], argv...).Run()
	})
	k.config = fmt.Sprintf(`  runtime: kubernetes
  kubernetes:
    kubeconfig: %s
    namespace: %s
    image_pull_policy: Never
    storage_class: %s
    storage_size: 1Gi
`, env["E2E_KUBECONFIG"], k.ns, class)
	return k
}

// kubeImage builds the suite's polecat image for the cluster: r.image
// with this test binary as the stand-in claude in it (a pod mounts
// nothing from the host), imported into the cluster's containerd, which
// pulls nothing. It returns the image's name; both copies go at the end.
func kubeImage(t *testing.T, r *rig, containerd string) string {
	image := "polecat-e2e-k8s:" + r.id
	ctx := t.TempDir()
	copyFile(t, r.binary, filepath.Join(ctx, "claude"))
	dockerfile := fmt.Sprintf("FROM %s\nCOPY claude /usr/local/bin/claude\n", r.image) // copyFile kept its mode; no BuildKit for --chmod
	if err := os.WriteFile(filepath.Join(ctx, "Dockerfile"), []byte(dockerfile), 0o600); err != nil {
		t.Fatal(err)
	}
	r.docker("build", "-q", "--label", label+"="+r.id, "-t", image, ctx)
	undo.push(func() { _, _ = tryDocker("rmi", "-f", image) })
	save := exec.Command("docker", "save", image)
	load := exec.Command("ctr", "-a", containerd, "-n", "k8s.io", "images", "import", "-")
	pipe, err := save.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	load.Stdin = pipe
	var loadOut strings.Builder
	load.Stdout, load.Stderr = &loadOut, &loadOut
	if err := save.Start(); err != nil {
		t.Fatal(err)
	}
	if err := load.Run(); err != nil {
		_ = save.Wait()
		t.Fatalf("importing %s into the cluster's containerd: %v\n%s", image, err, loadOut.String())
	}
	if err := save.Wait(); err != nil {
		t.Fatalf("docker save %s: %v", image, err)
	}
	undo.push(func() {
		_ = exec.Command("ctr", "-a", containerd, "-n", "k8s.io", "images", "rm", "docker.io/library/"+image).Run()
	})
	return image
}

// kubeObject is the name of the objects of name's sandbox in rig.
func kubeObject(rig, name string) string {
	return kube.ObjectName(sandbox.Name(wire.Identity{Rig: rig, Name: name}))
}

// kubePod gives the pod of a polecat's sandbox in rig.
func kubePod(rig string) func(string) string {
	return func(name string) string { return kube.PodName(kubeObject(rig, name)) }
}

// kubeObjects gives every object hostd run makes for a polecat's sandbox
// in rig, as kubectl names them.
func kubeObjects(rig string) func(string) []string {
	return func(name string) []string {
		o := kubeObject(rig, name)
		return []string{"statefulset/" + o, "pod/" + kube.PodName(o), "persistentvolumeclaim/" + o, "secret/" + o, "networkpolicy/" + o}
	}
}
