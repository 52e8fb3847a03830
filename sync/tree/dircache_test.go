package tree

import (
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/polecat-sidecar/sidecar/sync/internal/fixture"
)

// TestDirCacheOpenAs: files are opened through their directories, one
// directory after another, and only the file a listing described: one
// replaced since, a symlink in its place, or a directory that became a
// symlink leading out of the root before its run is refused; and through
// a directory moved out of the root during its run, only the files the
// listing saw there.
func TestDirCacheOpenAs(t *testing.T) {
	parent := t.TempDir()
	fixture.WriteTree(t, parent, map[string]string{
		"root/results/a/1": "a1", "root/results/a/2": "a2", "root/results/b/1": "b1",
		"root/results/swapped": "old", "root/results/linked": "file",
		"root/results/c/1": "c1",
		"root/results/d/1": "d1", "root/results/d/2": "d2",
		"outside/c/1": "secret",
	})
	dir := filepath.Join(parent, "root")
	tr, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	listed := map[string]os.FileInfo{}
	for _, rel := range []string{"results/a/1", "results/a/2", "results/b/1", "results/swapped", "results/linked", "results/c/1", "results/a", "results/d/1", "results/d/2"} {
		fi, err := tr.Lstat(rel)
		if err != nil {
			t.Fatal(err)
		}
		listed[rel] = fi
	}
	// After the listing: a file replaced, a file made a symlink, a
	// directory made a symlink leading out.
	replace := func(p string, with func(string) error) {
		if err := os.RemoveAll(filepath.Join(dir, p)); err != nil {
			t.Fatal(err)
		}
		if err := with(filepath.Join(dir, p)); err != nil {
			t.Fatal(err)
		}
	}
	// (a new file renamed over the old, so that its inode is another)
	if err := os.WriteFile(filepath.Join(dir, "results", "swapped.new"), []byte("new"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(dir, "results", "swapped.new"), filepath.Join(dir, "results", "swapped")); err != nil {
		t.Fatal(err)
	}
	replace("results/linked", func(p string) error { return os.Symlink("a/1", p) })
	replace("results/c", func(p string) error { return os.Symlink(filepath.Join(parent, "outside", "c"), p) })
	d := tr.Dirs()
	defer d.Close()
	tests := []struct {
		rel  string
		want string // "" when refused
	}{
		{"results/a/1", "a1"},
		{"results/a/2", "a2"},
		{"results/b/1", "b1"},
		{"results/a/1", "a1"}, // back to a directory opened before
		{"results/swapped", ""},
		{"results/linked", ""},
		{"results/c/1", ""},
		{"results/a", ""}, // a directory, not a file
		{"results/d/1", "d1"},
		{"results/d/2", ""}, // moved out with its directory after 1, and replaced there
	}
	for _, tt := range tests {
		f, err := d.OpenAs(tt.rel, listed[tt.rel])
		if tt.want == "" {
			if err == nil {
				f.Close()
				t.Errorf("%s: opened, want it refused", tt.rel)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tt.rel, err)
			continue
		}
		b, _ := io.ReadAll(f)
		f.Close()
		if string(b) != tt.want {
			t.Errorf("%s: read %q, want %q", tt.rel, b, tt.want)
		}
		if tt.rel == "results/d/1" { // its run started: d goes, and 2 in it is another file now
			moved := filepath.Join(parent, "outside", "d")
			if err := os.Rename(filepath.Join(dir, "results", "d"), moved); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(moved, "2.new"), []byte("written outside"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(filepath.Join(moved, "2.new"), filepath.Join(moved, "2")); err != nil {
				t.Fatal(err)
			}
		}
	}
}
