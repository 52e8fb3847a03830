package relay

import (
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/polecat-sidecar/sidecar/hostd/relay/internal/fixture"
)

// TestResolveRefusesTheShim: New refuses a gt or bd that is this project's
// own binary (the container's shim built as 'make build' builds it, bd
// linked to it, gt-agent linked as gt), found on PATH or configured,
// naming the file and the flag that fixes it; a script or another Go
// program is relayed to, and a missing one is only warned about.
func TestResolveRefusesTheShim(t *testing.T) {
	ours := t.TempDir() // the project's bin/: the shim gt, bd linked to it
	build := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", filepath.Join(ours, "gt"), "github.com/polecat-sidecar/sidecar/agent/gt")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the shim: %v\n%s", err, out)
	}
	if err := os.Symlink("gt", filepath.Join(ours, "bd")); err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable() // a binary of this module, as gt-agent linked as gt is
	if err != nil {
		t.Fatal(err)
	}
	host := t.TempDir() // the host's gt and bd: a script, and another module's Go program
	fixture.WriteFile(t, host, "gt", "#!/bin/sh\necho host gt\n")
	if err := os.Chmod(filepath.Join(host, "gt"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(runtime.GOROOT(), "bin", "go"), filepath.Join(host, "bd")); err != nil {
		t.Fatal(err)
	}
	empty := t.TempDir()

	for _, tc := range []struct {
		name     string
		path     []string          // hostd's PATH
		binaries map[string]string // relay.gt, relay.bd
		want     []string          // in the error; none: New succeeds
		found    map[string]string // then, the binary each command runs
	}{
		{name: "the project's bin first on PATH", path: []string{ours, host},
			want: []string{"gt resolves to " + filepath.Join(ours, "gt"), "agent/gt", "--relay-gt (relay.gt)", "not the host's gt"}},
		{name: "bd linked to the shim", path: []string{host}, binaries: map[string]string{"bd": filepath.Join(ours, "bd")},
			want: []string{"bd resolves to " + filepath.Join(ours, "bd"), "--relay-bd"}},
		{name: "gt-agent linked as gt, by name on PATH", path: []string{host}, binaries: map[string]string{"gt": self},
			want: []string{"gt resolves to " + self, "--relay-gt"}},
		{name: "the host's first on PATH", path: []string{host, ours},
			found: map[string]string{"gt": filepath.Join(host, "gt"), "bd": filepath.Join(host, "bd")}},
		{name: "the host's configured", path: []string{ours}, binaries: map[string]string{"gt": filepath.Join(host, "gt"), "bd": filepath.Join(host, "bd")},
			found: map[string]string{"gt": filepath.Join(host, "gt"), "bd": filepath.Join(host, "bd")}},
		{name: "missing: relaying it fails later", path: []string{empty}, found: map[string]string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("PATH", strings.Join(tc.path, string(os.PathListSeparator)))
			s, err := New(Config{Binaries: tc.binaries, Logger: slog.New(slog.DiscardHandler)})
			if len(tc.want) > 0 {
				if err == nil {
					t.Fatalf("New succeeded with %v", s.bins)
				}
				for _, w := range tc.want {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q lacks %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(s.bins) != len(tc.found) {
				t.Errorf("binaries %v, want %v", s.bins, tc.found)
			}
			for cmd, want := range tc.found {
				if s.bins[cmd] != want {
					t.Errorf("%s runs %q, want %q", cmd, s.bins[cmd], want)
				}
			}
		})
	}
}
