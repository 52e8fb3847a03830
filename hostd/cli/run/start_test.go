package run_test

import (
	"context"
	"crypto/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/polecat-sidecar/sidecar/hostd/api"
	"github.com/polecat-sidecar/sidecar/hostd/cli"
	"github.com/polecat-sidecar/sidecar/hostd/cli/clitest"
	"github.com/polecat-sidecar/sidecar/hostd/pki"
	"github.com/polecat-sidecar/sidecar/hostd/sandbox"
	"github.com/polecat-sidecar/sidecar/hostd/state"
	"github.com/polecat-sidecar/sidecar/internal/unixsock/unixsocktest"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// hostd is the whole command tree, as main runs it: hostd run's failures
// show in hostd status.
var hostd clitest.Hostd = func() *cobra.Command { return cli.NewRoot() }

// TestRunFailsFast: a hostd run that cannot start its polecat (hostd
// serve down, no runtime CLI, an engine that does not answer, an image
// the engine does not have) fails within seconds with one line saying
// what to do, before it makes anything, and hostd status then shows that
// polecat's failure, in the table, in JSON and in its detail: reported to
// hostd serve, or, with serve down, recorded for serve to show once it
// runs. With serve down the runtime is a stand-in that logs its argv: it
// must never be run. The cases marked docker use the machine's Docker
// CLI (and for the missing image, its engine), and are skipped without.
func TestRunFailsFast(t *testing.T) {
	image := "polecat-sidecar-test/missing:" + strings.ToLower(rand.Text()[:8])
	tests := []struct {
		name   string
		serve  bool
		docker bool
		args   []string
		env    map[string]string
		want   string
	}{
		{"hostd serve down", false, false, nil, nil, "hostd is not running (no daemon answers on "},
		{"no runtime CLI", true, false, []string{"--runtime", "/nonexistent/docker"}, nil, "container runtime not found: /nonexistent/docker (install it, or give --runtime)"},
		{"engine not answering", true, true, nil, map[string]string{"DOCKER_HOST": "unix:///nonexistent/docker.sock"},
			"the container runtime does not answer (start its engine, or name the one to use in sandbox.runtime): docker container: exit status 1: Cannot connect to the Docker daemon"},
		{"image missing", true, true, nil, nil, "image " + image + " is not among docker's images: build it ('make image'), pull or load it ('docker pull " + image + "')"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := exec.LookPath("docker"); tt.docker && err != nil {
				t.Skip("no docker CLI")
			}
			if tt.docker && tt.env == nil && exec.Command("docker", "info").Run() != nil {
				t.Skip("no Docker engine")
			}
			town := unixsocktest.Dir(t)
			if _, _, err := pki.Init(pki.Dir(town), ""); err != nil {
				t.Fatal(err)
			}
			id := wire.Identity{Rig: "failfast", Name: strings.ToLower(rand.Text()[:10])}
			if err := os.MkdirAll(filepath.Join(town, id.Rig, "polecats", id.Name), 0o755); err != nil {
				t.Fatal(err)
			}
			args := []string{"run", "--image", image}
			calls := filepath.Join(t.TempDir(), "calls")
			if !tt.serve {
				standIn := filepath.Join(t.TempDir(), "docker")
				if err := os.WriteFile(standIn, []byte("#!/bin/sh\necho \"$*\" >> "+calls+"\n"), 0o755); err != nil {
					t.Fatal(err)
				}
				args = append(args, "--runtime", standIn)
			} else {
				clitest.Serve(t, town)
			}
			t.Setenv("GT_RIG", id.Rig)
			t.Setenv("GT_POLECAT", id.Name)
			for k, v := range tt.env {
				t.Setenv(k, v)
			}

			start := time.Now()
			out, code := hostd.Run(t, town, "", append(append(args, tt.args...), "--", "claude")...)
			took := time.Since(start)
			line := "hostd: " + id.String() + " not started: " + tt.want
			if code != 1 || !strings.HasPrefix(out, line) || strings.Count(out, "\n") != 1 {
				t.Fatalf("hostd run: exit %d, %q; want 1 and one line %q...", code, out, line)
			}
			if took > 5*time.Second {
				t.Errorf("hostd run took %v to fail", took)
			}
			if b, err := os.ReadFile(calls); err == nil {
				t.Errorf("with hostd serve down, hostd run ran the runtime:\n%s", b)
			}
			if tt.docker && tt.env == nil { // the engine answers: nothing was made there
				if out, err := exec.Command("docker", "container", "inspect", sandbox.Name(id)).CombinedOutput(); err == nil || !strings.Contains(string(out), "No such container") {
					t.Errorf("a container %s is there after the failed start: %v %s", sandbox.Name(id), err, out)
				}
			}

			if !tt.serve {
				clitest.Serve(t, town) // it shows what hostd run recorded while it was down
			}
			hostd.Check(t, town, []clitest.Want{
				{Args: []string{"status"}, Code: 0, Out: "\n1 polecat hostd run could not start (each shown until its next start):\n  " + id.String() + ", "},
				{Args: []string{"status"}, Code: 0, Out: " ago: " + tt.want},
				{Args: []string{"status", id.String()}, Code: 0, Out: id.String() + ": dead for "},
				{Args: []string{"status", id.String()}, Code: 0, Out: "  start:     failed "},
				{Args: []string{"status", "--json"}, Code: 0, Out: `"reason": "` + tt.want},
			})
			st, err := api.NewSocketClient(state.For(town).Socket()).Status(context.Background())
			if err != nil || len(st.StartFailures) != 1 || st.StartFailures[0].Identity != api.Identity(id) {
				t.Errorf("status: %+v, %v; want %s's failure", st.StartFailures, err, id)
			}
		})
	}
}

// TestRunRemovesWhatItMade: when the sandbox hostd run made stops before
// its agent connects (an agent that cannot reach hostd gives up), the
// start fails at once and the sandbox goes again, so that a failed start
// leaves no container; a sandbox that was there before (the polecat's
// work) is never removed. The runtime is a stand-in that logs its argv,
// and whose sandbox runs once made or started and has stopped, with no
// reason given, the next time it is looked at; the containers' runtime
// behind it is images/e2e's (TestSandboxFailures).
func TestRunRemovesWhatItMade(t *testing.T) {
	tests := []struct {
		name    string
		exists  bool
		removed bool
	}{
		{"made by this start", false, true},
		{"there before", true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			town, _ := clitest.StartHostd(t)
			id := wire.Identity{Rig: "gastown", Name: "toast"}
			dir := t.TempDir()
			calls, bin := filepath.Join(dir, "calls"), filepath.Join(dir, "docker")
			if tt.exists {
				if err := os.WriteFile(filepath.Join(dir, "made"), nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			script := "#!/bin/sh\ncd " + dir + "\necho \"$*\" >> calls\ncase \"$1 $2\" in\n" +
				"'container inspect') [ -e made ] || { echo \"Error response from daemon: No such container: $4\" >&2; exit 1; }\n" +
				"  if [ -e up ]; then rm up; printf 'true\\t%s\\tgastown/toast\\t\\trunning\\t0\\t\\n' " + town + "\n" +
				"  else printf 'false\\t%s\\tgastown/toast\\t\\t\\t\\t\\n' " + town + "; fi;;\n" +
				"create*) touch made up;;\nstart*) touch up;;\n" +
				"esac\nexit 0\n"
			if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
				t.Fatal(err)
			}
			t.Setenv("GT_RIG", id.Rig)
			t.Setenv("GT_POLECAT", id.Name)
			out, code := hostd.Run(t, town, "", "run", "--runtime", bin, "--image", "polecat:1", "--", "claude")
			want := "hostd: gastown/toast not started: the sandbox gt-gastown-toast stopped before its agent connected: can it reach hostd at https://host.docker.internal:"
			if code != 1 || !strings.Contains(out, want) {
				t.Fatalf("hostd run: exit %d, %q; want %q", code, out, want)
			}
			b, _ := os.ReadFile(calls)
			if removed := strings.Contains(string(b), "\nrm -f -v gt-gastown-toast\n"); removed != tt.removed {
				t.Errorf("sandbox removed: %v, want %v; the runtime ran:\n%s", removed, tt.removed, b)
			}
			if strings.Contains("\n"+string(b), "\nexec ") {
				t.Errorf("hostd run ran the runtime's exec:\n%s", b)
			}
		})
	}
}

// TestRunWaitsForTheAgent: while the sandbox it made has not run yet and
// its agent has not connected, hostd run says every few seconds that it
// waits, with the runtime's reason; a reason that stays fails the start
// with it, and the sandbox goes. The runtime is a stand-in whose sandbox,
// once made, is forever restarting.
func TestRunWaitsForTheAgent(t *testing.T) {
	town, _ := clitest.StartHostd(t)
	dir := t.TempDir()
	bin := filepath.Join(dir, "docker")
	script := "#!/bin/sh\ncd " + dir + "\necho \"$*\" >> calls\ncase \"$1 $2\" in\n" +
		"'container inspect') [ -e made ] || { echo \"Error response from daemon: No such container: $4\" >&2; exit 1; }\n" +
		"  printf 'false\\t%s\\tgastown/toast\\t\\trestarting\\t1\\t\\n' " + town + ";;\n" +
		"create*) touch made;;\nesac\nexit 0\n"
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GT_RIG", "gastown")
	t.Setenv("GT_POLECAT", "toast")
	out, code := hostd.Run(t, town, "", "run", "--runtime", bin, "--image", "polecat:1", "--", "claude")
	want := "hostd: gastown/toast not started: the sandbox gt-gastown-toast does not start: restarting with status 1"
	if code != 1 || !strings.Contains(out, want) {
		t.Fatalf("hostd run: exit %d, %q; want %q", code, out, want)
	}
	if n := strings.Count(out, "hostd run: waiting for the agent of gastown/toast to connect (restarting with status 1)\n"); n < 3 {
		t.Errorf("hostd run said %d times that it waits, want one every 5 s:\n%s", n, out)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "calls")); !strings.Contains(string(b), "\nrm -f -v gt-gastown-toast\n") {
		t.Errorf("the sandbox it made was not removed; the runtime ran:\n%s", b)
	}
}
