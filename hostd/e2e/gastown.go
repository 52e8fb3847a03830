package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/polecat-sidecar/sidecar/tunnel/tunneltest"
)

// GasTown is a town Gas Town's own gt made as an operator makes one (gt
// install, then gt rig add on a local origin), with its Dolt server, for
// the tests that need the real gt, bd and dolt: 'make gastown-tools'
// builds them into GASTOWN_TOOLS.
type GasTown struct {
	// Tools is the directory holding gt, bd and dolt.
	Tools string
	// Dir is the town.
	Dir string
	// Origin is the rigs' origin, a local bare repository whose
	// .gitignore leaves out what Gas Town writes into a worktree.
	Origin string

	t        testing.TB
	doltPID  int
	stopOnce sync.Once
}

// NewGasTown makes the operator's environment for the test (a HOME of its
// own with git's and dolt's identities, PATH with the tools, hostd's
// binaries and path first, Gas Town's Dolt server on a free loopback
// port, none of Gas Town's variables from outside) and installs a town
// named name there, in a directory of that name. Its Dolt server is
// stopped when the test ends.
func NewGasTown(t testing.TB, tools, name string, path ...string) *GasTown {
	t.Helper()
	for _, k := range []string{"GT_TMUX_SOCKET", "TMUX", "TMUX_PANE", "GT_ROOT", "GT_TOWN", "GT_TOWN_ROOT", "HOSTD_TOWN", "BEADS_DIR", "GT_RIG", "GT_POLECAT", "GT_ROLE"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	t.Setenv("HOME", t.TempDir())
	t.Setenv("PATH", strings.Join(append(append([]string{tools, BinDir}, path...), os.Getenv("PATH")), ":"))
	t.Setenv("GT_DOLT_HOST", "127.0.0.1")
	t.Setenv("GT_DOLT_PORT", tunneltest.FreePort(t, "127.0.0.1"))
	g := &GasTown{Tools: tools, t: t, Origin: filepath.Join(t.TempDir(), "origin.git")}
	for _, kv := range [][]string{{"user.name", "operator"}, {"user.email", "operator@example.com"}, {"init.defaultBranch", "main"}} {
		g.Must(exec.Command("git", "config", "--global", kv[0], kv[1]))
	}
	for _, kv := range [][]string{{"metrics.disabled", "true"}, {"user.name", "operator"}, {"user.email", "operator@example.com"}} {
		g.Must(exec.Command("dolt", "config", "--global", "--add", kv[0], kv[1]))
	}
	seed := t.TempDir()
	g.Must(exec.Command("git", "init", "-q", seed))
	for file, data := range map[string]string{"README": "hello\n", ".gitignore": ".beads/\n.claude/\n.runtime/\nCLAUDE.md\n"} {
		if err := os.WriteFile(filepath.Join(seed, file), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	g.Must(exec.Command("git", "-C", seed, "add", "."))
	g.Must(exec.Command("git", "-C", seed, "commit", "-q", "-m", "first"))
	g.Must(exec.Command("git", "clone", "-q", "--bare", seed, g.Origin))

	// The town's name picks its tmux socket (<name>-<hash>).
	g.Dir = filepath.Join(t.TempDir(), name)
	t.Cleanup(g.Stop)
	if err := os.MkdirAll(g.Dir, 0o755); err != nil {
		t.Fatal(err)
	}
	g.GtMust(t, "install", g.Dir, "--name", name)
	if pid, err := os.ReadFile(filepath.Join(g.Dir, "daemon", "dolt.pid")); err == nil {
		g.doltPID, _ = strconv.Atoi(strings.TrimSpace(string(pid)))
	}
	return g
}

// AddRig adds a rig on the origin whose beads (and polecats' sessions)
// take prefix.
func (g *GasTown) AddRig(t testing.TB, rig, prefix string) {
	t.Helper()
	g.GtMust(t, "rig", "add", rig, "file://"+g.Origin, "--prefix", prefix)
}

// Gt is gt as the operator runs it, in the town.
func (g *GasTown) Gt(args ...string) *exec.Cmd {
	cmd := exec.Command(filepath.Join(g.Tools, "gt"), args...)
	cmd.Dir = g.Dir
	return cmd
}

// GtMust runs gt in the town and returns its output, failing the test on
// error.
func (g *GasTown) GtMust(t testing.TB, args ...string) string {
	t.Helper()
	out, err := g.Gt(args...).CombinedOutput()
	if err != nil {
		t.Fatalf("gt %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// Must runs cmd, failing the test on error.
func (g *GasTown) Must(cmd *exec.Cmd) {
	g.t.Helper()
	if out, err := cmd.CombinedOutput(); err != nil {
		g.t.Fatalf("%s: %v\n%s", strings.Join(cmd.Args, " "), err, out)
	}
}

// Stop stops the town's Dolt server (gt dolt stop, then its process if it
// is still there), once.
func (g *GasTown) Stop() {
	g.stopOnce.Do(func() {
		cmd := g.Gt("dolt", "stop")
		_ = cmd.Run()
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", g.doltPID))
		if g.doltPID > 0 && strings.Contains(string(cmdline), "sql-server") {
			if p, err := os.FindProcess(g.doltPID); err == nil {
				_ = p.Kill()
			}
		}
	})
}

// WriteFile writes data to path, making its directory.
func WriteFile(t testing.TB, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}
