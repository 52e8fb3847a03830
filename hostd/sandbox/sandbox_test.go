package sandbox

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

var toast = wire.Identity{Rig: "gastown", Name: "toast"}

// TestCreateArgs: the sandbox carries its town and polecat, joins with the
// token from the environment (never on the command line), reaches the
// host by host.docker.internal when the URL says so, and takes the
// limits given.
func TestCreateArgs(t *testing.T) {
	tests := []struct {
		name          string
		spec          Spec
		want, notWant []string
	}{
		{"defaults", Spec{Image: "polecat:1", URL: "https://host.docker.internal:9876", Agent: "/a"},
			[]string{"--label polecat-sidecar.town=/t", "--label polecat-sidecar.polecat=gastown/toast", "--label polecat-sidecar.home=42-7.000000001", "-e GT_AGENT_JOIN -e", "--add-host host.docker.internal:host-gateway", "--entrypoint /a polecat:1 up --watch-session polecat"},
			[]string{"--network", "--cpus", "--memory", "--pids-limit", "BEAT_INTERVAL", "TRANSPORT"}},
		{"limits", Spec{Image: "p", URL: "https://10.0.0.1:9876", Network: "n", Mounts: []string{"/a:/b:ro"}, CPUs: "2", Memory: "4g", PidsLimit: 512, Agent: "/a", BeatInterval: time.Second, Transport: "tcp"},
			[]string{"--network n", "-v /a:/b:ro", "--cpus 2", "--memory 4g", "--pids-limit 512", "-e GT_AGENT_BEAT_INTERVAL=1s", "-e GT_AGENT_TRANSPORT=tcp"},
			[]string{"--add-host"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := strings.Join(tt.spec.createArgs("/t", toast, "42-7.000000001"), " ")
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("%s\nlacks %q", got, w)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(got, w) {
					t.Errorf("%s\nhas %q", got, w)
				}
			}
		})
	}
}

// TestCreateLeavesNothing: a container Create made and could not start
// (a missing mount, no gt-agent in the image) is removed; when the create
// itself fails (a container of that name is there already), nothing is
// removed. The runtime is a stand-in that logs its argv and fails the
// step it is told to.
func TestCreateLeavesNothing(t *testing.T) {
	tests := []struct {
		name, fail string
		want       []string
	}{
		{"start fails", "start", []string{"create", "start gt-gastown-toast", "rm -f -v gt-gastown-toast"}},
		{"create fails", "create", []string{"create"}},
		{"both succeed", "", []string{"create", "start gt-gastown-toast"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			log, bin := filepath.Join(dir, "calls"), filepath.Join(dir, "docker")
			script := "#!/bin/sh\necho \"$*\" >> " + log + "\n[ \"$1\" = '" + tt.fail + "' ] && { echo 'Error response from daemon: no' >&2; exit 1; }\nexit 0\n"
			if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
				t.Fatal(err)
			}
			err := (CLI{Bin: bin}).Create(context.Background(), Spec{Image: "polecat:1", Agent: "/a"}, "/t", toast, "", "tok")
			if (err != nil) != (tt.fail != "") {
				t.Fatalf("Create: %v", err)
			}
			b, _ := os.ReadFile(log)
			var got []string
			for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
				if strings.HasPrefix(line, "create ") {
					line = "create"
				}
				got = append(got, line)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("the runtime ran %q, want %q", got, tt.want)
			}
		})
	}
}

// TestImageExists: against the machine's Docker engine, an image that is
// not among its local images is said so, and an engine that does not
// answer is an error, not a missing image.
func TestImageExists(t *testing.T) {
	if err := exec.Command("docker", "info").Run(); err != nil {
		t.Skip("no Docker engine")
	}
	rt := CLI{Bin: "docker"}
	if ok, err := rt.ImageExists(context.Background(), "polecat-sidecar-test/no-such-image:"+rand.Text()); ok || err != nil {
		t.Errorf("a missing image: %v, %v; want false, nil", ok, err)
	}
	if out, _ := exec.Command("docker", "image", "ls", "-q").Output(); len(out) > 0 {
		some := strings.Fields(string(out))[0]
		if ok, err := rt.ImageExists(context.Background(), some); !ok || err != nil {
			t.Errorf("image %s, which docker lists: %v, %v", some, ok, err)
		}
	}
	t.Setenv("DOCKER_HOST", "unix://"+filepath.Join(t.TempDir(), "no.sock"))
	if ok, err := rt.ImageExists(context.Background(), "polecat:1"); ok || err == nil || !strings.Contains(err.Error(), "Cannot connect") {
		t.Errorf("no engine: %v, %v; want the runtime's error", ok, err)
	}
}

// TestCapped: what a runtime command prints is kept up to the limit and
// the rest dropped, each write reported whole (the command is not stopped
// by a short write); its error output becomes one line.
func TestCapped(t *testing.T) {
	c := &Capped{Max: 8}
	for _, w := range []string{"12345", "67890", "abc"} {
		if n, err := c.Write([]byte(w)); n != len(w) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", w, n, err)
		}
	}
	if c.String() != "12345678" || c.Len() != 8 {
		t.Errorf("kept %q (%d bytes), want the first 8", c.String(), c.Len())
	}
	if got := oneLine("fatal: no\n\nhostd run: a line of ours?\n"); got != "fatal: no ; ; hostd run: a line of ours?" {
		t.Errorf("oneLine = %q", got)
	}
}

// TestRunCapsOutput: a runtime that prints more than maxOutput and
// maxError leaves hostd that much.
func TestRunCapsOutput(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "docker")
	script := "#!/bin/sh\nhead -c 3000000 /dev/zero\nhead -c 100000 /dev/zero | tr '\\0' 'e' >&2\nexit 1\n"
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := (CLI{Bin: bin}).run(context.Background(), nil, "inspect")
	if len(out) != maxOutput {
		t.Errorf("kept %d bytes of output, want %d", len(out), maxOutput)
	}
	if err == nil || strings.Count(err.Error(), "e") > maxError+10 {
		t.Errorf("the error kept more than %d bytes of error output: %d", maxError, len(fmt.Sprint(err)))
	}
}

// TestInspect: what the runtime says of a container, read back: whose it
// is, whether it runs, and for one that ran and stopped its exit as the
// Problem; no such container is none, not an error. The runtime is a
// stand-in that prints what docker's inspect would.
func TestInspect(t *testing.T) {
	tests := []struct {
		name, out string
		want      Info
	}{
		{"running", "true\t/t\tgastown/toast\th1\trunning\t0\t", Info{Exists: true, Running: true, Town: "/t", Polecat: "gastown/toast", Home: "h1"}},
		{"exited", "false\t/t\tgastown/toast\th1\texited\t1\t", Info{Exists: true, Town: "/t", Polecat: "gastown/toast", Home: "h1", Problem: "exited with status 1"}},
		{"did not start", "false\t/t\tgastown/toast\t\texited\t127\texec: \"gt-agent\": not found\n", Info{Exists: true, Town: "/t", Polecat: "gastown/toast",
			Problem: `exited with status 127: exec: "gt-agent": not found`}},
		{"created", "false\t/t\tgastown/toast\t\tcreated\t0\t", Info{Exists: true, Town: "/t", Polecat: "gastown/toast"}},
		{"before the status was asked for", "true\t/t\tgastown/toast", Info{Exists: true, Running: true, Town: "/t", Polecat: "gastown/toast"}},
		{"none", "", Info{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bin := filepath.Join(t.TempDir(), "docker")
			script := "#!/bin/sh\nprintf '%s' '" + tt.out + "'\n"
			if tt.out == "" {
				script = "#!/bin/sh\necho 'Error response from daemon: No such container: x' >&2\nexit 1\n"
			}
			if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
				t.Fatal(err)
			}
			if got, err := (CLI{Bin: bin}).Inspect(context.Background(), "gt-gastown-toast"); err != nil || got != tt.want {
				t.Errorf("Inspect = %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}
