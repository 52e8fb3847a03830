//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	harness "github.com/polecat-sidecar/sidecar/hostd/e2e"
	"github.com/polecat-sidecar/sidecar/tunnel/tunneltest"
)

// label marks every container and network the suite makes with the run's
// id, so a run interrupted hard (SIGKILL) is cleaned up by the next.
const label = "polecat-e2e"

// polecatNames are the three containers' polecats, in rig gastown.
var polecatNames = []string{"furiosa", "nux", "slit"}

// rig is the suite's world: hostd on the host serving a git town, the
// network, its firewall, and the polecat containers.
type rig struct {
	t       *testing.T
	id      string // this run's id, in every name
	image   string
	net     string           // the Docker network, also its bridge's name
	gateway string           // the host's address on it
	chain   string           // the iptables chain of the network's firewall
	addr    string           // hostd's tunnel address, gateway:port
	metrics string           // hostd's metrics address, also on the gateway
	town    *harness.Town    // the town hostd serves
	git     *harness.GitTown // the town's git fixtures, when newRig made it
	hostd   *harness.Proc
	serve   []string          // hostd serve's flags after --listen
	binary  string            // this test binary, mounted in every container
	fakeGT  string            // the host's stand-in gt and bd
	tokens  map[string]string // each polecat's join token
	ids     map[string]string // each polecat's container id
}

// newRig makes the network and its firewall and starts hostd on a git
// town; the containers come after (startPolecat).
func newRig(t *testing.T) *rig {
	r := newNetwork(t)
	r.git = harness.SeedGitTown(t)
	r.town = r.git.Town
	r.serve = []string{"--server-name", r.gateway, "--relay-gt", r.fakeGT, "--relay-bd", r.fakeGT,
		"--beat-interval", "1s", "--stale-beats", "2", "--idle-timeout", "8s", "--grace", "5s",
		"--metrics-listen", r.metrics, "--sandbox-reap", "1s"}
	r.startHostd()
	return r
}

// newNetwork makes the network and its firewall, and picks hostd's
// addresses on its gateway; the caller sets the town and starts hostd.
func newNetwork(t *testing.T) *rig {
	r := &rig{t: t, image: os.Getenv("E2E_IMAGE"), tokens: map[string]string{}, ids: map[string]string{}}
	if r.image == "" {
		t.Fatal("E2E_IMAGE names no polecat image: run 'make e2e', which builds one")
	}
	if os.Geteuid() != 0 {
		t.Fatal("the container suite installs iptables rules: run it as root")
	}
	removeLeftovers()
	if os.Getenv("E2E_REMOVE_IMAGE") != "" { // 'make e2e' built it for this run
		image := r.image // the Kubernetes suite's r.image is its own copy, removed on its own
		undo.push(func() { _, _ = tryDocker("rmi", "-f", image) })
	}
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	r.id = hex.EncodeToString(b)
	r.net = "pe2e-" + r.id
	r.chain = "PE2E-" + r.id
	var err error
	if r.binary, err = os.Executable(); err != nil {
		t.Fatal(err)
	}
	if r.fakeGT, err = filepath.Abs("../../hostd/e2e/testdata/fake-gt.sh"); err != nil {
		t.Fatal(err)
	}

	// An internal network (no route out) whose containers cannot reach
	// each other (icc off); the bridge is named after the network so the
	// firewall can name it.
	r.docker("network", "create", "--internal", "--label", label+"="+r.id, "--label", fmt.Sprintf("%s.pid=%d", label, os.Getpid()),
		"-o", "com.docker.network.bridge.enable_icc=false", "-o", "com.docker.network.bridge.name="+r.net, r.net)
	undo.push(func() { _, _ = tryDocker("network", "rm", r.net) })
	r.gateway = strings.TrimSpace(r.docker("network", "inspect", "-f", "{{(index .IPAM.Config 0).Gateway}}", r.net))
	r.addr = net.JoinHostPort(r.gateway, tunneltest.FreePort(t, r.gateway))

	// The host answers the bridge on hostd's port alone.
	_, port, _ := net.SplitHostPort(r.addr)
	r.iptables("-N", r.chain)
	undo.push(func() { _ = exec.Command("iptables", "-X", r.chain).Run() })
	undo.push(func() { _ = exec.Command("iptables", "-F", r.chain).Run() })
	r.iptables("-A", r.chain, "-p", "tcp", "--dport", port, "-j", "ACCEPT")
	r.iptables("-A", r.chain, "-p", "udp", "--dport", port, "-j", "ACCEPT")
	r.iptables("-A", r.chain, "-p", "tcp", "-j", "REJECT", "--reject-with", "tcp-reset")
	r.iptables("-A", r.chain, "-j", "REJECT")
	r.iptables("-I", "INPUT", "1", "-i", r.net, "-j", r.chain)
	undo.push(func() { _ = exec.Command("iptables", "-D", "INPUT", "-i", r.net, "-j", r.chain).Run() })

	r.metrics = net.JoinHostPort(r.gateway, tunneltest.FreePort(t, r.gateway))
	return r
}

// startHostd starts hostd on the network's gateway and fails the test if
// it does not answer within 5 s.
func (r *rig) startHostd() {
	if err := r.launchHostd(5 * time.Second); err != nil {
		r.t.Fatal(err)
	}
}

// launchHostd starts hostd on the network's gateway and waits up to d for
// it to answer. It does not fail the test, so the soak's chaos loop can
// call it. The test's cleanup stops hostd; so does the undo stack, for a
// run ended by a signal.
func (r *rig) launchHostd(d time.Duration) error {
	p := r.town.StartServe(r.addr, r.serve...)
	undo.push(func() { _ = p.Cmd.Process.Kill() })
	r.hostd = p
	return r.town.Up(d)
}

// restartHostd kills hostd and starts it again on the same town.
func (r *rig) restartHostd() {
	_ = r.hostd.Cmd.Process.Kill()
	_ = r.hostd.Exited(r.t, 5*time.Second)
	r.startHostd()
}

// container is the name of name's container.
func (r *rig) container(name string) string { return r.net + "-" + name }

// startPolecat starts gastown/<name>'s container: the image as it ships,
// joined with a one-time token, its stand-in claude (this binary as the
// pane program) writing what it receives to /tmp/pane.log.
func (r *rig) startPolecat(name string) {
	token := strings.TrimSpace(r.git.Run("token", "create", "gastown/"+name))
	r.tokens[name] = token
	c := r.container(name)
	r.docker("run", "-d", "--name", c, "--hostname", name, "--label", label+"="+r.id, "--network", r.net,
		"-e", "GT_PROXY_URL=https://"+r.addr, "-e", "GT_AGENT_JOIN="+token,
		"-e", "GT_RIG=gastown", "-e", "GT_POLECAT="+name,
		"-e", "GT_AGENT_BEAT_INTERVAL=1s", "-e", "GT_AGENT_QUIC_PROBE=2s",
		"-e", harness.PaneEnv+"=claude", "-e", harness.PaneLogEnv+"=/tmp/pane.log", "-e", harness.PaneBusyEnv+"=/tmp/busy",
		"-v", r.binary+":/usr/local/bin/claude:ro", r.image)
	undo.push(func() { _, _ = tryDocker("rm", "-f", "-v", c) })
	r.ids[name] = strings.TrimSpace(r.docker("inspect", "--format", "{{.Id}}", c))
}

// thaw unfreezes name's container through its cgroup's freezer, for when
// docker unpause fails: it has been seen to hang, with docker inspect, on
// a container whose freezer stayed FROZEN. Docker still takes the
// container for paused afterwards.
func (r *rig) thaw(name string) error {
	id := r.ids[name]
	if id == "" {
		return fmt.Errorf("thawing %s: its container id is unknown", name)
	}
	for _, f := range []struct{ glob, value string }{
		{"/sys/fs/cgroup/freezer/*/" + id + "/freezer.state", "THAWED"},              // cgroup v1, Docker's cgroupfs driver
		{"/sys/fs/cgroup/freezer/*/docker-" + id + ".scope/freezer.state", "THAWED"}, // v1, systemd's
		{"/sys/fs/cgroup/*/" + id + "/cgroup.freeze", "0"},                           // v2, Docker's cgroupfs driver
		{"/sys/fs/cgroup/system.slice/docker-" + id + ".scope/cgroup.freeze", "0"},   // v2, systemd's
	} {
		if paths, _ := filepath.Glob(f.glob); len(paths) > 0 {
			if err := os.WriteFile(paths[0], []byte(f.value), 0o644); err != nil {
				return fmt.Errorf("thawing %s: %w", name, err)
			}
			return nil
		}
	}
	return fmt.Errorf("thawing %s: no freezer for container %s under /sys/fs/cgroup", name, id)
}

// docker runs docker and returns its output, failing the test on error.
func (r *rig) docker(args ...string) string {
	r.t.Helper()
	out, err := tryDocker(args...)
	if err != nil {
		r.t.Fatalf("docker %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// exec runs argv in name's container as user ("" for the image's) and
// returns its output and error.
func (r *rig) exec(name, user string, argv ...string) (string, error) {
	args := []string{"exec"}
	if user != "" {
		args = append(args, "-u", user)
	}
	return tryDocker(append(append(args, r.container(name)), argv...)...)
}

// role runs this binary's role in name's container as user and decodes
// what it prints into v.
func (r *rig) role(name, user string, v any, role string, args ...string) {
	r.t.Helper()
	out, err := r.exec(name, user, append([]string{"env", roleEnv + "=" + role, "claude"}, args...)...)
	if err != nil {
		r.t.Fatalf("role %s in %s: %v\n%s", role, name, err, out)
	}
	if err := json.Unmarshal([]byte(out), v); err != nil {
		r.t.Fatalf("role %s in %s printed %q: %v", role, name, out, err)
	}
}

// veth is the host side of name's network interface.
func (r *rig) veth(name string) string {
	r.t.Helper()
	idx, err := r.exec(name, "", "cat", "/sys/class/net/eth0/iflink")
	if err != nil {
		r.t.Fatalf("reading %s's interface: %v %s", name, err, idx)
	}
	ifs, err := net.Interfaces()
	if err != nil {
		r.t.Fatal(err)
	}
	for _, i := range ifs {
		if fmt.Sprint(i.Index) == strings.TrimSpace(idx) {
			return i.Name
		}
	}
	r.t.Fatalf("no host interface has index %s", idx)
	return ""
}

// ip is name's address on the network.
func (r *rig) ip(name string) string {
	return strings.TrimSpace(r.docker("inspect", "-f", "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}", r.container(name)))
}

// iptables runs iptables, failing the test on error.
func (r *rig) iptables(args ...string) {
	r.t.Helper()
	if out, err := exec.Command("iptables", args...).CombinedOutput(); err != nil {
		r.t.Fatalf("iptables %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// tryDocker runs docker and returns its combined output.
func tryDocker(args ...string) (string, error) {
	return tryDockerWithin(2*time.Minute, args...) // a hung docker must not hang the run
}

// tryDockerWithin is tryDocker, giving up after d.
func tryDockerWithin(d time.Duration, args ...string) (string, error) {
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	cmd := exec.CommandContext(ctx, "docker", args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// removeLeftovers removes what earlier runs killed outright left: the
// containers, network and firewall chain of every run whose process is
// gone (a run's network carries its id and pid). A run in progress beside
// this one is left alone.
func removeLeftovers() {
	nets, _ := tryDocker("network", "ls", "--filter", "label="+label, "--format", `{{.Name}} {{.Label "`+label+`"}} {{.Label "`+label+`.pid"}}`)
	for _, line := range strings.Split(strings.TrimSpace(nets), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 {
			continue
		}
		if pid, err := strconv.Atoi(f[2]); err == nil && syscall.Kill(pid, 0) == nil {
			continue // still running
		}
		if ids, _ := tryDocker("ps", "-aq", "--filter", "label="+label+"="+f[1]); strings.TrimSpace(ids) != "" {
			_, _ = tryDocker(append([]string{"rm", "-f", "-v"}, strings.Fields(ids)...)...)
		}
		_, _ = tryDocker("network", "rm", f[0])
		chain := "PE2E-" + f[1]
		_ = exec.Command("iptables", "-D", "INPUT", "-i", f[0], "-j", chain).Run()
		_ = exec.Command("iptables", "-F", chain).Run()
		_ = exec.Command("iptables", "-X", chain).Run()
	}
}
