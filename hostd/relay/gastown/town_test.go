package gastown

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/polecat-sidecar/sidecar/hostd/relay/internal/fixture"
)

// TestWorkDir: a relayed command runs in the polecat's worktree, else its
// rig's directory, else the town, and a symlink anywhere below the town
// sends it to a fallback, never through the link. Each case runs a real
// process there and reads its working directory.
func TestWorkDir(t *testing.T) {
	wt := filepath.Join("gastown", "polecats", "furiosa", "gastown")
	cases := []struct {
		name  string
		setup func(t *testing.T, town, elsewhere string)
		want  string // below the town
	}{
		{"worktree", func(t *testing.T, town, _ string) { fixture.Mkdirs(t, town, wt) }, wt},
		{"rig only", func(t *testing.T, town, _ string) { fixture.Mkdirs(t, town, "gastown") }, "gastown"},
		{"polecat's directory without its worktree", func(t *testing.T, town, _ string) {
			fixture.Mkdirs(t, town, "gastown/polecats/furiosa")
		}, "gastown"},
		{"another polecat's worktree", func(t *testing.T, town, _ string) {
			fixture.Mkdirs(t, town, "gastown/polecats/nux/gastown", "gastown/polecats/furiosa/other")
		}, "gastown"},
		{"no rig", func(t *testing.T, town, _ string) { fixture.Mkdirs(t, town, "other/polecats/furiosa/gastown") }, ""},
		{"worktree is a file", func(t *testing.T, town, _ string) {
			fixture.WriteFile(t, town, wt, "not a directory")
		}, "gastown"},
		{"symlinked worktree", func(t *testing.T, town, elsewhere string) {
			fixture.Mkdirs(t, town, "gastown/polecats/furiosa")
			fixture.Symlink(t, elsewhere, town, wt)
		}, "gastown"},
		{"symlinked worktree inside the town", func(t *testing.T, town, _ string) {
			fixture.Mkdirs(t, town, "gastown/polecats/nux/gastown", "gastown/polecats/furiosa")
			fixture.Symlink(t, "../nux/gastown", town, wt)
		}, "gastown"},
		{"symlinked polecat directory", func(t *testing.T, town, elsewhere string) {
			fixture.Mkdirs(t, town, "gastown/polecats")
			fixture.Mkdirs(t, elsewhere, "gastown")
			fixture.Symlink(t, elsewhere, town, "gastown/polecats/furiosa")
		}, "gastown"},
		{"symlinked polecats directory", func(t *testing.T, town, elsewhere string) {
			fixture.Mkdirs(t, town, "gastown")
			fixture.Mkdirs(t, elsewhere, "furiosa/gastown")
			fixture.Symlink(t, elsewhere, town, "gastown/polecats")
		}, "gastown"},
		{"symlinked rig", func(t *testing.T, town, elsewhere string) {
			fixture.Mkdirs(t, elsewhere, "polecats/furiosa/gastown")
			fixture.Symlink(t, elsewhere, town, "gastown")
		}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			town, elsewhere := fixture.RealTempDir(t), fixture.RealTempDir(t)
			c.setup(t, town, elsewhere)
			want := filepath.Join(town, c.want)
			dir := workDir(town, fixture.Furiosa)
			if dir != want {
				t.Fatalf("workDir = %s, want %s", dir, want)
			}
			cmd := exec.Command("/bin/sh", "-c", "pwd -P")
			cmd.Dir = dir
			out, err := cmd.Output()
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.TrimSpace(string(out)); got != want {
				t.Errorf("the command ran in %s, want %s", got, want)
			}
		})
	}
}

// TestRigPrefix: the prefix comes from mayor/rigs.json, else the town's
// rigs.json, else it is "gt".
func TestRigPrefix(t *testing.T) {
	rigs := func(prefix string) string {
		return `{"version":1,"rigs":{"gastown":{"git_url":"x","beads":{"repo":"","prefix":"` + prefix + `"}},"beads":{"beads":{"prefix":"bd"}}}}`
	}
	cases := []struct {
		name  string
		files map[string]string
		want  string
	}{
		{"no rigs.json", nil, "gt"},
		{"mayor's", map[string]string{"mayor/rigs.json": rigs("ga")}, "ga"},
		{"mayor's before the town's", map[string]string{"mayor/rigs.json": rigs("ga"), "rigs.json": rigs("gb")}, "ga"},
		{"the town's when the mayor's is missing", map[string]string{"rigs.json": rigs("gb")}, "gb"},
		{"rig not listed", map[string]string{"mayor/rigs.json": `{"rigs":{"beads":{"beads":{"prefix":"bd"}}}}`}, "gt"},
		{"empty prefix", map[string]string{"mayor/rigs.json": rigs("")}, "gt"},
		{"no beads entry", map[string]string{"mayor/rigs.json": `{"rigs":{"gastown":{}}}`}, "gt"},
		{"mayor's unreadable, the town's not used", map[string]string{"mayor/rigs.json": "{", "rigs.json": rigs("gb")}, "gt"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			town := t.TempDir()
			for name, data := range c.files {
				fixture.WriteFile(t, town, name, data)
			}
			if got := rigPrefix(town, "gastown"); got != c.want {
				t.Errorf("rigPrefix = %q, want %q", got, c.want)
			}
		})
	}
}

// TestDoltPort: the listener port of .dolt-data/config.yaml, else
// GT_DOLT_PORT, else mayor/daemon.json's, else 0.
func TestDoltPort(t *testing.T) {
	const yaml = "log_level: info\nlistener:\n  host: 127.0.0.1\n  port: 3311\n  max_connections: 100\ndata_dir: /x\n"
	const daemon = `{"env":{"GT_DOLT_PORT":"3313"}}`
	cases := []struct {
		name  string
		files map[string]string
		env   string // GT_DOLT_PORT
		want  int
	}{
		{"nothing", nil, "", 0},
		{"config.yaml", map[string]string{".dolt-data/config.yaml": yaml, "mayor/daemon.json": daemon}, "3312", 3311},
		{"port outside the listener block", map[string]string{".dolt-data/config.yaml": "port: 1\nlistener:\n  host: x\nother:\n  port: 2\n"}, "3312", 3312},
		{"environment", map[string]string{"mayor/daemon.json": daemon}, "3312", 3312},
		{"environment not a port", map[string]string{"mayor/daemon.json": daemon}, "x", 3313},
		{"daemon.json", map[string]string{"mayor/daemon.json": daemon}, "", 3313},
		{"daemon.json without the port", map[string]string{"mayor/daemon.json": `{"env":{}}`}, "", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			town := t.TempDir()
			for name, data := range c.files {
				fixture.WriteFile(t, town, name, data)
			}
			getenv := func(k string) string {
				if k == "GT_DOLT_PORT" {
					return c.env
				}
				return ""
			}
			if got := DoltPort(town, getenv); got != c.want {
				t.Errorf("DoltPort = %d, want %d", got, c.want)
			}
		})
	}
}

// TestPolecatSlot: the polecat's index among the rig's polecat
// directories in name order, hidden ones and files not counted.
func TestPolecatSlot(t *testing.T) {
	cases := []struct {
		name string
		dirs []string
		want int
	}{
		{"no polecats directory", nil, 0},
		{"first", []string{"furiosa", "nux"}, 0},
		{"after others", []string{"ace", "bullet-farmer", "furiosa", "nux"}, 2},
		{"hidden directories and files not counted", []string{".claude", "ace", "file:b", "furiosa"}, 1},
		{"not there: the count", []string{"ace", "bee"}, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			town := t.TempDir()
			fixture.Mkdirs(t, town, "gastown")
			for _, d := range c.dirs {
				if f, ok := strings.CutPrefix(d, "file:"); ok {
					fixture.WriteFile(t, town, "gastown/polecats/"+f, "")
				} else {
					fixture.Mkdirs(t, town, "gastown/polecats/"+d)
				}
			}
			if got := polecatSlot(town, fixture.Furiosa); got != c.want {
				t.Errorf("polecatSlot = %d, want %d", got, c.want)
			}
		})
	}
}
