package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestLinuxOnly: built for macOS, gt-agent and the gt shim stop with an
// error saying they run in Linux containers only, not with whichever
// Linux-only call the compiler meets first.
func TestLinuxOnly(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to build with")
	}
	for _, tc := range []struct{ pkg, want string }{
		{".", "undefined: gt_agent_runs_in_Linux_containers_only__build_it_with_GOOS_linux"},
		{"./gt", "undefined: gt_runs_in_Linux_containers_only__build_it_with_GOOS_linux"},
	} {
		for _, arch := range []string{"arm64", "amd64"} {
			cmd := exec.Command(goTool, "build", "-o", os.DevNull, tc.pkg)
			cmd.Env = append(os.Environ(), "GOOS=darwin", "GOARCH="+arch, "CGO_ENABLED=0")
			out, err := cmd.CombinedOutput()
			// The package's name, then this one error.
			if err == nil || !strings.Contains(string(out), tc.want) || strings.Count(string(out), "\n") != 2 {
				t.Errorf("GOOS=darwin GOARCH=%s go build %s: %v\n%s\nwant the one error %q", arch, tc.pkg, err, out, tc.want)
			}
		}
	}
}
