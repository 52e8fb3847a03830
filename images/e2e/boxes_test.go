//go:build e2e && gastown

package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/polecat-sidecar/sidecar/hostd/sandbox"
)

// boxes is the runtime the container polecat's sandbox runs on, as the
// suite reaches into it: Docker ('make e2e-gastown') or Kubernetes
// ('make e2e-k8s', E2E_RUNTIME=kubernetes). hostd run drives the
// runtime only to make, start and remove the sandbox; the suite uses it
// to play the polecat's agent in the sandbox and to see what is there.
type boxes interface {
	// kind names the runtime in the table: docker, kubernetes.
	kind() string
	// command is argv run in name's sandbox, in dir, with env added.
	command(name, dir string, env []string, argv ...string) *exec.Cmd
	// id names the sandbox's current incarnation: a container's id, a
	// pod's uid; "" when there is none.
	id(name string) string
	// gone says whether the sandbox and all it stored are gone, and what
	// is left when not.
	gone(name string) (bool, string)
	// kill ends the sandbox under its session the runtime's way (docker
	// kill; a pod deleted), and waits until the runtime runs it again or
	// holds it stopped.
	kill(name string) error
	// remove removes what is left of name's sandbox (a run's cleanup).
	remove(name string)
}

// output runs argv in name's sandbox and returns its combined output.
func output(b boxes, name string, argv ...string) (string, error) {
	out, err := b.command(name, "", nil, argv...).CombinedOutput()
	return string(out), err
}

// dockerBoxes are sandboxes on this machine's Docker, container
// gt-<rig>-<name> each.
type dockerBoxes struct{ rig string }

func (d dockerBoxes) kind() string { return "docker" }

func (d dockerBoxes) container(name string) string { return "gt-" + d.rig + "-" + name }

func (d dockerBoxes) command(name, dir string, env []string, argv ...string) *exec.Cmd {
	args := []string{"exec"}
	if dir != "" {
		args = append(args, "-w", dir)
	}
	for _, kv := range env {
		args = append(args, "-e", kv)
	}
	return exec.Command("docker", append(append(args, d.container(name)), argv...)...)
}

func (d dockerBoxes) id(name string) string {
	out, err := tryDocker("inspect", "-f", "{{.Id}}", d.container(name))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(out)
}

func (d dockerBoxes) gone(name string) (bool, string) {
	if d.id(name) != "" {
		return false, "container " + d.container(name)
	}
	return true, ""
}

func (d dockerBoxes) kill(name string) error {
	if out, err := tryDocker("kill", d.container(name)); err != nil {
		return fmt.Errorf("docker kill: %v %s", err, out)
	}
	return nil
}

func (d dockerBoxes) remove(name string) { _, _ = tryDocker("rm", "-f", "-v", d.container(name)) }

// removeStale removes the sandboxes hostd run made for this suite's
// towns (gtsuite<id>) that are gone: those of runs killed before their
// cleanup. Other towns' sandboxes are left alone.
func (d dockerBoxes) removeStale() {
	out, _ := tryDocker("ps", "-a", "--filter", "label="+sandbox.TownLabel, "--format", `{{.Names}} {{.Label "`+sandbox.TownLabel+`"}}`)
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		name, town, ok := strings.Cut(line, " ")
		if !ok || !strings.HasPrefix(filepath.Base(town), "gtsuite") {
			continue
		}
		if _, err := os.Stat(town); os.IsNotExist(err) {
			_, _ = tryDocker("rm", "-f", "-v", name)
		}
	}
}

// kubeBoxes are sandboxes on the test cluster (images/k8s-local), in
// namespace ns, reached with kubectl.
type kubeBoxes struct {
	rig, ns    string
	kubectl    []string // the command and its --kubeconfig
	podOf      func(name string) string
	objectsOf  func(name string) []string // every object hostd run made for the sandbox, kind/name each
	restarting time.Duration
	config     string // hostd's settings for the cluster: config.yaml's lines under sandbox:
}

func (k kubeBoxes) kind() string { return "kubernetes" }

// k runs kubectl in the namespace and returns its combined output.
func (k kubeBoxes) k(args ...string) (string, error) {
	argv := append(append(append([]string(nil), k.kubectl[1:]...), "-n", k.ns), args...)
	out, err := exec.Command(k.kubectl[0], argv...).CombinedOutput()
	return string(out), err
}

func (k kubeBoxes) command(name, dir string, env []string, argv ...string) *exec.Cmd {
	args := append(append([]string(nil), k.kubectl[1:]...), "-n", k.ns, "exec", k.podOf(name), "--")
	if dir != "" || len(env) > 0 {
		// kubectl exec has no -w or -e: env(1) sets both.
		pre := []string{"env"}
		if dir != "" {
			pre = append(pre, "-C", dir)
		}
		argv = append(append(pre, env...), argv...)
	}
	return exec.Command(k.kubectl[0], append(args, argv...)...)
}

func (k kubeBoxes) id(name string) string {
	out, err := k.k("get", "pod", k.podOf(name), "-o", "jsonpath={.metadata.uid} {.status.phase}")
	if err != nil {
		return ""
	}
	uid, phase, _ := strings.Cut(strings.TrimSpace(out), " ")
	if phase != "Running" {
		return ""
	}
	return uid
}

func (k kubeBoxes) gone(name string) (bool, string) {
	var left []string
	for _, obj := range k.objectsOf(name) {
		if out, err := k.k("get", obj, "-o", "name"); err == nil && strings.TrimSpace(out) != "" {
			left = append(left, obj)
		}
	}
	return len(left) == 0, strings.Join(left, ", ")
}

func (k kubeBoxes) kill(name string) error {
	before := k.id(name)
	if out, err := k.k("delete", "pod", k.podOf(name), "--wait=false"); err != nil {
		return fmt.Errorf("kubectl delete pod: %v %s", err, out)
	}
	for deadline := time.Now().Add(k.restarting); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if id := k.id(name); id != "" && id != before {
			return nil
		}
	}
	return fmt.Errorf("the cluster did not run %s's pod again within %v", name, k.restarting)
}

func (k kubeBoxes) remove(name string) {
	for _, obj := range k.objectsOf(name) {
		_, _ = k.k("delete", obj, "--ignore-not-found", "--wait=false")
	}
}
