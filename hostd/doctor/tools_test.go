package doctor

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
)

// script writes an executable shell script named name in dir.
func script(t *testing.T, dir, name, body string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// pathIn is a PATH lookup of dir alone.
func pathIn(dir string) func(string) (string, error) {
	return func(name string) (string, error) { return exec.LookPath(filepath.Join(dir, name)) }
}

// TestTool: the host's gt or bd is found, Gas Town's (this project's
// shim, built from agent/gt, fails: hostd serve refuses it), and of the
// tested version; another version, or one that cannot be told, is a
// warning, as is none at all (hostd serve relays the rest).
func TestTool(t *testing.T) {
	dir := t.TempDir()
	script(t, dir, "gt", `echo "gt version 1.0.1 (dev: main@0123abcd)"`)
	script(t, dir, "gt-old", `echo "gt version 0.9.2 (release)"`)
	script(t, dir, "gt-mute", `echo "usage: gt"; exit 2`)
	script(t, dir, "bd", `echo "bd version 1.0.0 (dev)"`)
	shim := t.TempDir()
	if out, err := exec.Command("go", "build", "-o", filepath.Join(shim, "gt"), "../../agent/gt").CombinedOutput(); err != nil {
		t.Fatalf("building agent/gt: %v\n%s", err, out)
	}
	tests := []struct {
		name, cmd, program, tested string
		dir                        string
		status                     Status
		want, fix                  string
	}{
		{"gt tested", "gt", "gt", TestedGT, dir, OK, "version 1.0.1", ""},
		{"bd tested", "bd", "bd", TestedBD, dir, OK, "version 1.0.0", ""},
		{"relay.gt names another", "gt", "gt-old", TestedGT, dir, Warn, "version 0.9.2, not the tested v1.0.1", "install gt v1.0.1"},
		{"no version", "gt", "gt-mute", TestedGT, dir, Warn, `'gt-mute version' failed (exit status 2): "usage: gt"`, "Gas Town's gt"},
		{"not installed", "bd", "bd", TestedBD, t.TempDir(), Warn, "not found", "set relay.bd (--relay-bd)"},
		{"the shim", "gt", "gt", TestedGT, shim, Fail, "this project's container shim (built from github.com/polecat-sidecar/sidecar/agent/gt)", "ahead of " + shim},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			expect(t, Tool(context.Background(), tt.cmd, tt.program, tt.tested, pathIn(tt.dir)), tt.status, tt.want, tt.fix)
		})
	}
}

// TestTestedVersions: the versions doctor holds gt and bd to are the ones
// the Makefile builds for make e2e-gastown.
func TestTestedVersions(t *testing.T) {
	mk, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"GT_VERSION": TestedGT, "BD_VERSION": TestedBD} {
		m := regexp.MustCompile(`(?m)^` + name + `\s*\?=\s*(\S+)$`).FindSubmatch(mk)
		if m == nil || string(m[1]) != want {
			t.Errorf("the Makefile's %s is %q, doctor's %q: change them together", name, m, want)
		}
	}
}
