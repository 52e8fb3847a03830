package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestName: the program is bd when called bd and gt under any other name,
// relays to $GT_AGENT_SOCKET, and exits 255 saying so when no agent
// answers there.
func TestName(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "gt")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("building gt: %v\n%s", err, out)
	}
	socket := filepath.Join(dir, "agent.sock")
	tests := []struct {
		link, want string
	}{
		{"gt", "gt"},
		{"bd", "bd"},
		{"gt-1.2", "gt"},
	}
	for _, tc := range tests {
		t.Run(tc.link, func(t *testing.T) {
			path := filepath.Join(dir, tc.link)
			if path != bin {
				if err := os.Symlink(bin, path); err != nil {
					t.Fatal(err)
				}
			}
			cmd := exec.Command(path, "status")
			cmd.Env = append(os.Environ(), "GT_AGENT_SOCKET="+socket)
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 255 {
				t.Fatalf("exit %v, want 255", err)
			}
			if want := tc.want + ": gt-agent is not running (cannot connect to " + socket; !strings.HasPrefix(string(out), want) {
				t.Errorf("output %q, want it to start %q", out, want)
			}
		})
	}
}
