package doctor

import (
	"context"
	"debug/buildinfo"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/polecat-sidecar/sidecar/hostd/relay"
	"github.com/polecat-sidecar/sidecar/hostd/sandbox"
)

// The versions of Gas Town's gt and bd hostd is tested with: the
// Makefile's GT_VERSION and BD_VERSION, which make e2e-gastown builds and
// runs the relay against (TestTestedVersions holds the two equal).
const (
	TestedGT = "v1.0.1"
	TestedBD = "v1.0.0"
)

// versionTimeout bounds '<program> version'.
const versionTimeout = 10 * time.Second

// Tool checks the host program a polecat's cmd (gt or bd) is relayed to:
// name (relay.gt or relay.bd, else cmd) found by lookPath, not this
// project's container shim (which would relay back to a gt-agent: hostd
// serve refuses it), and its version the one tested.
func Tool(ctx context.Context, cmd, name, tested string, lookPath func(string) (string, error)) Line {
	setting := fmt.Sprintf("relay.%s (--relay-%s)", cmd, cmd)
	path, err := lookPath(name)
	if err == nil {
		path, err = filepath.Abs(path)
	}
	if err != nil {
		return warn(cmd, fmt.Sprintf("install Gas Town's %s %s on PATH ('brew install gastown', or go install), or set %s to it", cmd, tested, setting),
			"%s not found (%v): the polecats' %s commands will fail", name, err, cmd)
	}
	if pkg, ours := relay.BuiltHere(path); ours {
		return fail(cmd, fmt.Sprintf("put Gas Town's %s ahead of %s on PATH, or set %s to it", cmd, filepath.Dir(path), setting),
			"%s is this project's container shim (built from %s), not Gas Town's %s: hostd serve does not start with it", path, pkg, cmd)
	}
	v, err := toolVersion(ctx, path)
	if err != nil {
		return warn(cmd, fmt.Sprintf("check that it is Gas Town's %s, or set %s to it", cmd, setting), "%s: %v", path, err)
	}
	if strings.TrimPrefix(v, "v") != strings.TrimPrefix(tested, "v") {
		return warn(cmd, fmt.Sprintf("install %s %s, which hostd's relay grammar is tested against (make e2e-gastown), or check that its commands still pass", cmd, tested),
			"%s is version %s, not the tested %s", path, v, tested)
	}
	return ok(cmd, "%s, version %s", path, v)
}

// versionRE finds a version in a program's 'version' output: Gas Town's
// print "gt version 1.0.1 (dev: main@abc)", "bd version 1.0.0 (...)".
var versionRE = regexp.MustCompile(`version v?(\d+\.\d+\.\d+[0-9A-Za-z.+-]*)`)

// toolVersion is the version the program at path says it is ('path
// version'), else the one Go recorded in it (a go install of a tagged
// module).
func toolVersion(ctx context.Context, path string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, versionTimeout)
	defer cancel()
	out := &sandbox.Capped{Max: 4 << 10}
	cmd := exec.CommandContext(ctx, path, "version")
	cmd.Stdout, cmd.Stderr = out, out
	runErr := cmd.Run()
	if m := versionRE.FindStringSubmatch(out.String()); m != nil {
		return m[1], nil
	}
	if bi, err := buildinfo.ReadFile(path); err == nil && strings.HasPrefix(bi.Main.Version, "v") {
		return strings.TrimPrefix(bi.Main.Version, "v"), nil
	}
	first, _, _ := strings.Cut(strings.TrimSpace(out.String()), "\n")
	if runErr != nil {
		return "", fmt.Errorf("'%s version' failed (%v): %q", filepath.Base(path), runErr, first)
	}
	return "", fmt.Errorf("'%s version' names no version: %q", filepath.Base(path), first)
}
