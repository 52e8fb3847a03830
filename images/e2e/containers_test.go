//go:build e2e

package e2e

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/polecat-sidecar/sidecar/hostd/api"

	harness "github.com/polecat-sidecar/sidecar/hostd/e2e"
)

// TestContainers runs every check in order on one rig: the checks share
// the three containers, and the later ones break them on purpose.
func TestContainers(t *testing.T) {
	start := time.Now()
	r := newRig(t)
	summary.add("setup: network, firewall, hostd on the gateway", true, time.Since(start))
	host := filepath.Join(r.git.Dir, "gastown", "polecats", "furiosa")
	const lines = "one\ntwo\nthree\nfour\nfive\nsix\n"
	harness.WriteFile(t, filepath.Join(host, "CLAUDE.md"), lines)
	harness.WriteFile(t, filepath.Join(host, "results", "report.txt"), "draft")

	r.check("three containers join with one-time tokens and are working", func(t *testing.T) {
		for _, name := range polecatNames {
			r.startPolecat(name)
		}
		for _, name := range polecatNames {
			r.wait(60*time.Second, name+" working over QUIC", all(harness.InState(name, "working"), harness.Connected(name, "quic")))
		}
	})

	r.check("tini reaps orphans: no zombies accumulate", func(t *testing.T) {
		var before, after procs
		r.role("slit", "0", &before, "procs")
		// Each orphan's parent exits at once; the orphan leaves a file
		// when it ends, so the check knows they ran.
		orphans := "for i in $(seq 30); do ( (sleep 0.2; touch /tmp/orphan.$i) & ); done"
		if out, err := r.exec("slit", "0", "sh", "-c", orphans); err != nil {
			t.Fatalf("%v %s", err, out)
		}
		eventually(t, 10*time.Second, "the 30 orphans ended", func() bool {
			out, _ := r.exec("slit", "0", "sh", "-c", "ls /tmp | grep -c '^orphan\\.'")
			return strings.TrimSpace(out) == "30"
		})
		// A process the agent runs now and then (a tmux capture, a beat's
		// sample) may be alive at the moment of the count: look again for
		// up to 15 s; a zombie or a leftover stays and fails.
		for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(500 * time.Millisecond) {
			r.role("slit", "0", &after, "procs")
			if (len(after.Zombies) == 0 && after.Count <= before.Count) || time.Now().After(deadline) {
				break
			}
		}
		t.Logf("PID 1 %s; processes before %d, after 30 orphans ended %d; zombies %v", after.Init, before.Count, after.Count, after.Zombies)
		if after.Init != "tini" {
			t.Errorf("PID 1 is %q, want tini", after.Init)
		}
		if len(after.Zombies) > 0 || after.Count > before.Count {
			t.Errorf("after the orphans ended: %d processes (%d before), zombies %v", after.Count, before.Count, after.Zombies)
		}
	})

	r.check("gt and bd run on the host as the container's polecat", func(t *testing.T) {
		for _, name := range []string{"furiosa", "nux"} {
			// The environment cannot claim another polecat.
			out, err := tryDocker("exec", "-e", "GT_POLECAT=slit", "-e", "BD_ACTOR=mayor", r.container(name), "gt", "nudge", "env")
			if err != nil {
				t.Fatalf("gt status in %s: %v\n%s", name, err, out)
			}
			for _, want := range []string{"GT_RIG=gastown", "GT_POLECAT=" + name, "BD_ACTOR=gastown/polecats/" + name} {
				if !slices.Contains(strings.Split(out, "\n"), want) {
					t.Errorf("%s's gt ran on the host without %s:\n%s", name, want, out)
				}
			}
		}
		out, err := r.exec("furiosa", "", "bd", "show", "args", "two words", "--json")
		if err != nil || out != "two words\x00--json\x00" {
			t.Errorf("bd's argv on the host: %q, %v", out, err)
		}
		if out, err := r.exec("furiosa", "", "gt", "rig", "remove", "gastown"); err == nil {
			t.Errorf("a subcommand off the allowlist ran: %s", out)
		}
	})

	r.check("git: push own branch; main and another's branch refused", func(t *testing.T) {
		script := `set -e
cd /home/polecat
git clone -q http://127.0.0.1:9878/v1/git/gastown repo
cd repo
git -c user.name=furiosa -c user.email=furiosa@gastown commit -q --allow-empty -m "from the container"
git push -q origin HEAD:refs/heads/polecat/furiosa-e2e
git rev-parse HEAD`
		out, err := r.exec("furiosa", "", "sh", "-c", script)
		if err != nil {
			t.Fatalf("clone, commit and push: %v\n%s", err, out)
		}
		head := lastLine(out)
		if refs := r.git.Refs(t, r.git.Repo); !strings.Contains(refs, head+" refs/heads/polecat/furiosa-e2e") {
			t.Errorf("the rig's repository lacks the pushed branch at %s:\n%s", head, refs)
		}
		for _, ref := range []string{"main", "polecat/nux", "polecat/nux-e2e"} {
			out, err := r.exec("furiosa", "", "sh", "-c", "cd /home/polecat/repo && git push origin HEAD:refs/heads/"+ref)
			if err == nil {
				t.Errorf("push to %s accepted:\n%s", ref, out)
			}
		}
		if refs := r.git.Refs(t, r.git.Repo); strings.Contains(refs, head+" refs/heads/main") || strings.Contains(refs, "polecat/nux") {
			t.Errorf("a refused push changed the rig's repository:\n%s", refs)
		}
	})

	r.check("isolation: a container reaches hostd's port and nothing else", func(t *testing.T) {
		l, err := net.Listen("tcp", ":0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				c.Close()
			}
		}()
		_, open := splitPort(l.Addr().String())
		if out, err := tryDocker("exec", "-d", "-e", roleEnv+"=listen", r.container("nux"), "claude", ":7070"); err != nil {
			t.Fatalf("listener in nux: %v %s", err, out)
		}
		var self map[string]string
		eventually(t, 20*time.Second, "nux reaching its own listener on 127.0.0.1:7070", func() bool {
			r.role("nux", "", &self, "dial", "127.0.0.1:7070")
			return self["127.0.0.1:7070"] == "connected"
		})
		_, hostdPort := splitPort(r.addr)
		_, metrics := splitPort(r.metrics)
		want := map[string]bool{ // address: reachable
			net.JoinHostPort(r.gateway, hostdPort): true,
			net.JoinHostPort(r.gateway, open):      false, // another host port
			net.JoinHostPort(r.gateway, metrics):   false, // hostd's metrics
			net.JoinHostPort(r.gateway, "22"):      false,
			net.JoinHostPort(r.ip("nux"), "7070"):  false, // another container
			"1.1.1.1:443":                          false, // outside
		}
		if ip := otherHostIP(r.gateway); ip != "" {
			want[net.JoinHostPort(ip, open)] = false // the host by another address
		}
		var got map[string]string
		r.role("furiosa", "0", &got, "dial", slices.Collect(maps.Keys(want))...)
		for addr, reach := range want {
			if (got[addr] == "connected") != reach {
				t.Errorf("root in furiosa dialing %s: %s", addr, got[addr])
			}
		}
		t.Logf("root in furiosa: %v", got)
	})

	r.check("isolation: no secret in a container but its own key", func(t *testing.T) {
		needles := map[string]string{} // what: a line of it
		keys, _ := filepath.Glob(filepath.Join(r.git.Dir, ".runtime", "ca", "*.key"))
		if len(keys) == 0 {
			t.Fatal("found no key of hostd's to look for")
		}
		for _, k := range keys {
			b, _ := os.ReadFile(k)
			needles["hostd's "+filepath.Base(k)] = pemLine(t, b)
		}
		for _, name := range []string{"nux", "slit"} {
			b, err := r.exec(name, "0", "cat", "/run/gt-agent/client.key")
			if err != nil {
				t.Fatalf("%s's key: %v", name, err)
			}
			needles[name+"'s key"] = pemLine(t, []byte(b))
		}
		own, err := r.exec("furiosa", "0", "cat", "/run/gt-agent/client.key")
		if err != nil {
			t.Fatal(err)
		}
		ownLine := pemLine(t, []byte(own))
		all := maps.Clone(needles)
		all["furiosa's own key"] = ownLine
		found := scanExport(t, r.container("furiosa"), all)
		if !found["furiosa's own key"] {
			t.Fatal("the scan did not find furiosa's own key: it reads nothing")
		}
		// The environment: the container's, and every process's (read as
		// their user: root in a container may not read another user's).
		env, _ := r.exec("furiosa", "1000", "sh", "-c", "cat /proc/[0-9]*/environ 2>/dev/null")
		env += r.docker("inspect", "-f", "{{json .Config.Env}}", r.container("furiosa"))
		for name, token := range r.tokens {
			if name != "furiosa" {
				needles[name+"'s join token"] = token
			}
		}
		for what, line := range needles {
			if found[what] || strings.Contains(env, line) {
				t.Errorf("%s is in furiosa's container", what)
			}
		}
		// The one token there is its own, and spent.
		if !strings.Contains(env, "GT_AGENT_JOIN="+r.tokens["furiosa"]) {
			t.Fatalf("furiosa's environment lacks its join token: it reads nothing:\n%s", env)
		}
		out, err := exec.Command(filepath.Join(harness.BinDir, "gt-agent"), "up", "--join", r.tokens["furiosa"], "--identity", "gastown/furiosa",
			"--url", "https://"+r.addr, "--state-dir", t.TempDir(), "--socket", filepath.Join(t.TempDir(), "a.sock"),
			"--git-listen", "", "--connect-timeout", "5s").CombinedOutput()
		if err == nil || !strings.Contains(string(out), "join:") {
			t.Errorf("furiosa's join token, used again: %v\n%s", err, out)
		}
		for _, l := range strings.Split(string(out), "\n") {
			if strings.Contains(l, "join:") {
				t.Logf("furiosa's token used again: %s", l)
			}
		}
	})

	r.check("nudge typed once, also across a hostd restart", func(t *testing.T) {
		if out, err := r.git.Try("nudge", "gastown/furiosa", "hello from the host"); err != nil {
			t.Fatalf("hostd nudge: %v\n%s", err, out)
		}
		r.waitPane(t, "furiosa", []string{"hello from the host"})
		if out, err := r.exec("furiosa", "", "gt-agent", "hook", "PreToolUse"); err != nil {
			t.Fatalf("hook: %v %s", err, out)
		}
		if out, err := r.git.Try("nudge", "--no-wait", "gastown/furiosa", "after the restart"); !isExit(err, 3) {
			t.Fatalf("queued nudge for a busy polecat: %v\n%s", err, out)
		}
		r.restartHostd()
		r.wait(20*time.Second, "furiosa back after hostd's restart", harness.Connected("furiosa", ""))
		if out, err := r.exec("furiosa", "", "gt-agent", "hook", "Stop"); err != nil {
			t.Fatalf("hook: %v %s", err, out)
		}
		r.waitPane(t, "furiosa", []string{"hello from the host", "after the restart"})
		time.Sleep(time.Second)
		r.waitPane(t, "furiosa", []string{"hello from the host", "after the restart"})
	})

	r.check("hostd peek and hostd attach on a container", func(t *testing.T) {
		if out := r.git.Run("peek", "gastown/furiosa"); !strings.Contains(out, "❯") {
			t.Errorf("peek shows no prompt:\n%s", out)
		}
		sock := filepath.Join(t.TempDir(), "tmux.sock")
		stopTmux := func() { _ = exec.Command("tmux", "-S", sock, "kill-server").Run() }
		undo.push(stopTmux)
		defer stopTmux()
		tmux := func(args ...string) string {
			out, err := exec.Command("tmux", append([]string{"-S", sock}, args...)...).CombinedOutput()
			if err != nil {
				t.Fatalf("tmux %v: %v %s", args, err, out)
			}
			return string(out)
		}
		tmux("new-session", "-d", "-s", "gt-gastown-furiosa", "-x", "120", "-y", "40", "--",
			filepath.Join(harness.BinDir, "hostd"), "--town", r.git.Dir, "attach", "gastown/furiosa", "--rw")
		eventually(t, 10*time.Second, "the attached pane shows the prompt", func() bool {
			return strings.Contains(tmux("capture-pane", "-p", "-t", "=gt-gastown-furiosa:"), "❯")
		})
		tmux("send-keys", "-t", "=gt-gastown-furiosa:", "-l", "typed through attach")
		tmux("send-keys", "-t", "=gt-gastown-furiosa:", "Enter")
		r.waitPane(t, "furiosa", []string{"hello from the host", "after the restart", "typed through attach"})
	})

	r.check("UDP blocked: falls back to TCP, returns to QUIC when unblocked", func(t *testing.T) {
		_, port := splitPort(r.addr)
		rule := []string{r.chain, "-m", "physdev", "--physdev-in", r.veth("nux"), "-p", "udp", "--dport", port, "-j", "DROP"}
		r.iptables(append([]string{"-I"}, slices.Insert(rule, 1, "1")...)...)
		blocked := true
		defer func() {
			if blocked {
				_ = exec.Command("iptables", append([]string{"-D"}, rule...)...).Run()
			}
		}()
		r.wait(45*time.Second, "nux over TCP", all(harness.Connected("nux", "tcp"), harness.InState("nux", "working")))
		r.iptables(append([]string{"-D"}, rule...)...)
		blocked = false
		r.wait(30*time.Second, "nux back on QUIC", harness.Connected("nux", "quic"))
	})

	r.check("docker pause: stale; unpause: working again", func(t *testing.T) {
		r.docker("pause", r.container("nux"))
		r.wait(15*time.Second, "nux stale", harness.InState("nux", "stale"))
		back := time.Now()
		r.docker("unpause", r.container("nux"))
		r.wait(20*time.Second, "nux working", stateSince("nux", "working", back))
	})

	r.check("network disconnect: drops; connect: returns by itself", func(t *testing.T) {
		r.docker("network", "disconnect", r.net, r.container("nux"))
		r.wait(30*time.Second, "nux disconnected", harness.InState("nux", "disconnected"))
		back := time.Now()
		r.docker("network", "connect", r.net, r.container("nux"))
		r.wait(45*time.Second, "nux working", all(connectedSince("nux", back), harness.InState("nux", "working")))
	})

	r.check("a hostile container does not disturb the other two", func(t *testing.T) {
		victims := []string{"furiosa", "nux"}
		base := map[string]latency{}
		for _, v := range victims {
			var l latency
			r.role(v, "", &l, "latency", "10")
			base[v] = l
		}
		var report hostileReport
		done := make(chan error, 1)
		attack := time.Now()
		go func() {
			out, err := r.exec("slit", "0", "env", roleEnv+"=hostile", "claude", "15s")
			if err == nil {
				err = json.Unmarshal([]byte(out), &report)
			}
			if err != nil {
				err = fmt.Errorf("%v: %s", err, out)
			}
			done <- err
		}()
		r.wait(20*time.Second, "the hostile client's tunnels replacing slit's", connectedSince("slit", attack))
		during := map[string]latency{}
		for _, v := range victims {
			var l latency
			r.role(v, "", &l, "latency", "10")
			during[v] = l
		}
		if err := <-done; err != nil {
			t.Fatalf("the hostile client: %v", err)
		}
		t.Logf("hostile client: %+v", report)
		if report.Tunnels == 0 || report.JunkTCP == 0 || report.Relays == 0 {
			t.Errorf("the hostile client did not get going: %+v", report)
		}
		for _, v := range victims {
			b, d := base[v].median(), during[v].median()
			t.Logf("%s: relay median %.1f ms before, %.1f ms during", v, b, d)
			if during[v].Errors > 0 {
				t.Errorf("%s: %d relayed commands failed during the attack: %s", v, during[v].Errors, during[v].Last)
			}
			if d > 5*b+250 {
				t.Errorf("%s: relay median %.1f ms during the attack, %.1f before", v, d, b)
			}
		}
		for _, v := range victims {
			r.wait(10*time.Second, v+" working", all(harness.Connected(v, ""), harness.InState(v, "working")))
		}
	})

	r.check("docker restart: rejoins with its certificate, session restarted", func(t *testing.T) {
		start := time.Now()
		r.docker("restart", r.container("slit"))
		r.wait(45*time.Second, "slit working on a new tunnel", all(connectedSince("slit", start), harness.InState("slit", "working")))
		if out, err := r.exec("slit", "", "tmux", "has-session", "-t", "=polecat"); err != nil {
			t.Errorf("no polecat session after the restart: %v %s", err, out)
		}
		var certs []struct {
			Identity string `json:"identity"`
			Source   string `json:"source"`
		}
		if err := json.Unmarshal([]byte(r.git.Run("cert", "list", "--json")), &certs); err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, c := range certs {
			if c.Identity == "gastown/slit" {
				n++
			}
		}
		if n != 1 {
			t.Errorf("slit has %d certificates after the restart, want its one: %+v", n, certs)
		}
	})

	r.check("data pulled home at docker stop, merged, conflict reported", func(t *testing.T) {
		if out, err := r.exec("furiosa", "", "cat", "/work/CLAUDE.md"); err != nil || out != lines {
			t.Fatalf("the host's CLAUDE.md in the container: %q %v", out, err)
		}
		edit := `set -e
sed -i 's/^one$/ONE (container)/' /work/CLAUDE.md
printf "container's report" > /work/results/report.txt
printf "made in the container" > /work/results/new.txt
mkdir -p /work/results/.ssh && printf stolen > /work/results/.ssh/id_ed25519`
		if out, err := r.exec("furiosa", "", "sh", "-c", edit); err != nil {
			t.Fatalf("editing in the container: %v %s", err, out)
		}
		harness.WriteFile(t, filepath.Join(host, "CLAUDE.md"), strings.Replace(lines, "six", "SIX (host)", 1))
		harness.WriteFile(t, filepath.Join(host, "results", "report.txt"), "host's report")
		start := time.Now()
		r.docker("stop", r.container("furiosa"))
		t.Logf("docker stop took %v", time.Since(start).Round(100*time.Millisecond))
		want := strings.Replace(strings.Replace(lines, "one", "ONE (container)", 1), "six", "SIX (host)", 1)
		if b, _ := os.ReadFile(filepath.Join(host, "CLAUDE.md")); string(b) != want {
			t.Errorf("CLAUDE.md on the host after the stop:\n%s", b)
		}
		if b, _ := os.ReadFile(filepath.Join(host, "results", "new.txt")); string(b) != "made in the container" {
			t.Errorf("results/new.txt on the host: %q", b)
		}
		copies, _ := filepath.Glob(filepath.Join(host, "results", "report.txt.conflict-furiosa-*"))
		if b, _ := os.ReadFile(filepath.Join(host, "results", "report.txt")); string(b) != "host's report" || len(copies) != 1 {
			t.Errorf("the conflict: host keeps %q, copies %v", b, copies)
		}
		if _, err := os.Stat(filepath.Join(host, "results", ".ssh")); err == nil {
			t.Error("a secret came home from the container")
		}
		if log := r.git.Run("sync", "log"); !strings.Contains(log, "upload (teardown)") {
			t.Errorf("sync log has no teardown upload:\n%s", log)
		}
		if st := r.git.Run("status"); !strings.Contains(st, "data conflict") {
			t.Errorf("hostd status does not report the conflict:\n%s", st)
		}
	})

	r.check("docker kill: disconnected, then dead", func(t *testing.T) {
		r.docker("kill", r.container("nux"))
		r.wait(20*time.Second, "nux disconnected", harness.InState("nux", "disconnected"))
		r.wait(20*time.Second, "nux dead", harness.InState("nux", "dead"))
	})
}

// check runs one check as a subtest, with the rig failing that subtest,
// and records it in the summary.
func (r *rig) check(name string, f func(t *testing.T)) {
	parent := r.t
	start := time.Now()
	ok := parent.Run(name, func(t *testing.T) {
		r.t = t
		defer func() { r.t = parent }()
		f(t)
	})
	summary.add(name, ok, time.Since(start))
}

// wait polls hostd's status until pred holds, failing the check after d.
func (r *rig) wait(d time.Duration, what string, pred func(api.Status) bool) {
	r.t.Helper()
	c := r.town.Client()
	var last api.Status
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		st, err := c.Status(ctx)
		cancel()
		if err == nil && pred(st) {
			return
		}
		last = st
	}
	var b strings.Builder
	for _, p := range last.Polecats {
		fmt.Fprintf(&b, "\n  %s: %s connected=%v transport=%s", p.Name, p.State, p.Connected, p.Transport)
	}
	r.t.Fatalf("not %s within %v; last status:%s", what, d, b.String())
}

// waitPane waits until name's stand-in claude has received exactly want.
func (r *rig) waitPane(t *testing.T, name string, want []string) {
	t.Helper()
	var got []string
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		out, _ := r.exec(name, "", "cat", "/tmp/pane.log")
		got = got[:0]
		sc := bufio.NewScanner(strings.NewReader(out))
		for sc.Scan() {
			var rec harness.PaneRecord
			if json.Unmarshal(sc.Bytes(), &rec) == nil {
				got = append(got, rec.Line)
			}
		}
		if slices.Equal(got, want) {
			return
		}
		if len(got) > len(want) {
			break
		}
	}
	t.Fatalf("%s's pane received %q, want %q", name, got, want)
}

// connectedSince is true when name's tunnel came up after t.
func connectedSince(name string, t time.Time) func(api.Status) bool {
	return func(st api.Status) bool {
		for _, p := range st.Polecats {
			if p.Name == name && p.Connected && p.Since.After(t) {
				return true
			}
		}
		return false
	}
}

// stateSince is true when name entered state after t.
func stateSince(name, state string, t time.Time) func(api.Status) bool {
	return func(st api.Status) bool {
		for _, p := range st.Polecats {
			if p.Name == name && p.State == state && p.StateSince.After(t) {
				return true
			}
		}
		return false
	}
}

// all is true when every predicate is.
func all(preds ...func(api.Status) bool) func(api.Status) bool {
	return func(st api.Status) bool {
		for _, p := range preds {
			if !p(st) {
				return false
			}
		}
		return true
	}
}

// eventually polls cond until it holds, failing the test after d.
func eventually(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(d); !cond(); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s", d, what)
		}
	}
}

// scanExport reads name's whole filesystem (docker export) and says which
// needles some file holds.
func scanExport(t *testing.T, container string, needles map[string]string) map[string]bool {
	t.Helper()
	cmd := exec.Command("docker", "export", container)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	found := map[string]bool{}
	tr := tar.NewReader(out)
	files := 0
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("reading the export of %s: %v", container, err)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		files++
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		for what, line := range needles {
			if bytes.Contains(b, []byte(line)) {
				found[what] = true
				t.Logf("%s found in %s", what, h.Name)
			}
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("docker export %s: %v", container, err)
	}
	t.Logf("scanned %d files of %s", files, container)
	return found
}

// pemLine is the first full line of base64 in a PEM key: enough to find
// the key in a file.
func pemLine(t *testing.T, pem []byte) string {
	t.Helper()
	for _, l := range strings.Split(string(pem), "\n") {
		if len(l) == 64 && !strings.HasPrefix(l, "-----") {
			return l
		}
	}
	t.Fatalf("no base64 line in %q", pem)
	return ""
}

// otherHostIP is an IPv4 address of this host other than loopback and the
// suite's gateway, or "".
func otherHostIP(gateway string) string {
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() && n.IP.String() != gateway {
			return n.IP.String()
		}
	}
	return ""
}

// splitPort splits host:port.
func splitPort(addr string) (host, port string) {
	host, port, _ = net.SplitHostPort(addr)
	return host, port
}

// lastLine is out's last word (the last line of output that ends in one).
func lastLine(out string) string {
	f := strings.Fields(out)
	if len(f) == 0 {
		return ""
	}
	return f[len(f)-1]
}

// isExit says whether err is an exit with code.
func isExit(err error, code int) bool {
	var ee *exec.ExitError
	return err != nil && errors.As(err, &ee) && ee.ExitCode() == code
}
