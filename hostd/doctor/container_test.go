package doctor

import (
	"context"
	"crypto/rand"
	"fmt"
	"os/exec"
	"testing"

	"github.com/polecat-sidecar/sidecar/hostd/sandbox"
	"github.com/polecat-sidecar/sidecar/internal/cli"
)

// engine is what a stand-in container runtime answers (building images
// is slow, and docker is outside the product): info exits with info;
// 'image inspect' knows image alone, answering its labels (version and
// revision) when asked for them; 'run' prints run and exits with
// runExit; every command fails with down's message when it is set.
type engine struct {
	info, runExit               int
	down, image, run            string
	labelVersion, labelRevision string
}

// standIn writes the runtime as a program and returns its path.
func (r engine) standIn(t *testing.T) string {
	t.Helper()
	down := ""
	if r.down != "" {
		down = fmt.Sprintf("echo %q >&2; exit 1\n", r.down)
	}
	return script(t, t.TempDir(), "docker", down+fmt.Sprintf(`case "$1" in
info) exit %d ;;
image)
  eval "last=\${$#}"
  [ "$last" = %q ] || { echo "Error: No such image: $last" >&2; exit 1; }
  case "$4" in *Labels*) printf '%%s\t%%s\n' %q %q ;; *) echo sha256:0123 ;; esac ;;
run) printf '%%s\n' %q; exit %d ;;
*) exit 1 ;;
esac
`, r.info, r.image, r.labelVersion, r.labelRevision, r.run, r.runExit))
}

// TestRuntime: the runtime's CLI is installed and its engine answers.
func TestRuntime(t *testing.T) {
	tests := []struct {
		name      string
		bin       func(t *testing.T) string
		status    Status
		want, fix string
	}{
		{"engine answering", func(t *testing.T) string { return engine{}.standIn(t) }, OK, "its engine answers", ""},
		{"engine down", func(t *testing.T) string {
			return engine{info: 1, down: "Cannot connect to the Docker daemon at unix:///var/run/docker.sock"}.standIn(t)
		}, Fail, "engine does not answer: ", "start its engine"},
		{"not installed", func(t *testing.T) string { t.Setenv("PATH", t.TempDir()); return "docker" }, Fail, "docker is not installed", "install Docker"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			expect(t, Runtime(context.Background(), sandbox.CLI{Bin: tt.bin(t)}), tt.status, tt.want, tt.fix)
		})
	}
}

// TestImage: the configured image is among the runtime's images, and its
// gt-agent is hostd's build: by the image's labels, else by what the
// gt-agent in it says.
func TestImage(t *testing.T) {
	const image = "polecat:v1.2.0"
	hostd := cli.Build{Version: "v1.2.0", Revision: "4f45b9f0a1b2c3d4e5f60718293a4b5c6d7e8f90"}
	old := `{"version":"v1.1.0","revision":"0123456789abcdef0123456789abcdef01234567"}`
	same := fmt.Sprintf(`{"version":"v1.2.0","revision":%q}`, hostd.Revision)
	tests := []struct {
		name      string
		rt        engine
		image     string
		status    Status
		want, fix string
	}{
		{"none set", engine{image: image}, "", Warn, "no sandbox.image", "make image"},
		{"not there", engine{image: image}, "polecat:other", Fail, "polecat:other is not among", "make image"},
		{"engine down", engine{down: "Cannot connect to the Docker daemon"}, image, Fail, "Cannot connect to the Docker daemon", "see runtime"},
		{"labels, this hostd", engine{image: image, labelVersion: "v1.2.0", labelRevision: hostd.Revision}, image, OK, "as hostd, by its labels", ""},
		{"labels, an older gt-agent", engine{image: image, labelVersion: "v1.1.0", labelRevision: "0123456789abcdef"}, image, Warn,
			"has gt-agent v1.1.0 (commit 0123456789ab) by its labels; hostd is v1.2.0 (commit 4f45b9f0a1b2)", "make image"},
		{"no labels, gt-agent says this hostd", engine{image: image, labelVersion: "<no value>", labelRevision: "<no value>", run: same}, image, OK, "as hostd, by its own word", ""},
		{"labels of a plain build, gt-agent older", engine{image: image, labelVersion: "dev", labelRevision: "unknown", run: old}, image, Warn,
			"has gt-agent v1.1.0 (commit 0123456789ab) by its own word", "make image"},
		{"no gt-agent", engine{image: image, run: "exec: gt-agent: not found", runExit: 127}, image, Warn, "gt-agent's version cannot be told", "sandbox.agent"},
		{"gt-agent says nothing", engine{image: image, run: "hello"}, image, Warn, `printed "hello"`, "sandbox.agent"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rt := sandbox.CLI{Bin: tt.rt.standIn(t)}
			expect(t, Image(context.Background(), rt, tt.image, "/usr/local/bin/gt-agent", hostd), tt.status, tt.want, tt.fix)
		})
	}
}

// TestImageDocker: against the machine's Docker engine, where there is
// one, an image it does not have fails.
func TestImageDocker(t *testing.T) {
	if err := exec.Command("docker", "info").Run(); err != nil {
		t.Skip("no Docker engine")
	}
	rt := sandbox.CLI{Bin: "docker"}
	expect(t, Runtime(context.Background(), rt), OK, "its engine answers", "")
	missing := "polecat-sidecar-test/no-such-image:" + rand.Text()
	expect(t, Image(context.Background(), rt, missing, "/usr/local/bin/gt-agent", cli.Build{Version: "dev"}), Fail, missing+" is not among docker's images", "docker pull")
}
