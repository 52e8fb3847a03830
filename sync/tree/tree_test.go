package tree

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/polecat-sidecar/sidecar/sync/internal/fixture"
)

// TestTreeRefusesThroughLinks: no operation reaches through a symlink or a
// file among a path's parents, not even one leading inside the root, and
// nothing outside the root changes; a path of plain directories works.
func TestTreeRefusesThroughLinks(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "root")
	fixture.WriteTree(t, parent, map[string]string{
		"root/results/d/f": "in a directory",
		"root/results/in":  "->d",
		"root/results/out": "->../../outside",
		"root/results/f":   "a file",
		"outside/victim":   "never touched",
	})
	tr, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	ops := map[string]func(rel string) error{
		"Lstat":     func(rel string) error { _, err := tr.Lstat(rel); return err },
		"WriteFile": func(rel string) error { return tr.WriteFile(rel, []byte("x"), 0o600) },
		"MkdirAll":  func(rel string) error { return tr.MkdirAll(rel, 0o755) },
		"Remove":    func(rel string) error { return tr.Remove(rel) },
		"Symlink":   func(rel string) error { return tr.Symlink("f", rel) },
		"Rename to": func(rel string) error { return tr.Rename("results/f", rel) },
		"Rename":    func(rel string) error { return tr.Rename(rel, "results/d/moved") },
	}
	cases := []struct {
		rel, through, is string
	}{
		{"results/in/f", "results/in", "symlink"},
		{"results/out/victim", "results/out", "symlink"},
		{"results/f/x", "results/f", "file"},
	}
	for name, op := range ops {
		for _, c := range cases {
			var pe *PlainPathError
			if err := op(c.rel); !errors.As(err, &pe) || pe.Through != c.through || pe.Is != c.is {
				t.Errorf("%s(%s): %v, want it refused through the %s %s", name, c.rel, err, c.is, c.through)
			}
		}
	}
	if b, err := os.ReadFile(filepath.Join(parent, "outside/victim")); err != nil || string(b) != "never touched" {
		t.Errorf("outside the root: %q %v", b, err)
	}
	if err := tr.WriteFile("results/d/g", []byte("new"), 0o640); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "results/d/g")); err != nil || string(b) != "new" {
		t.Errorf("results/d/g: %q %v", b, err)
	}
	if _, err := tr.Open("results/in"); err == nil {
		t.Error("Open followed a symlink to a directory")
	}
}
