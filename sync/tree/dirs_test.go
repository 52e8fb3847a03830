package tree

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/polecat-sidecar/sidecar/sync/internal/fixture"
)

// TestOpenAs: files are opened through their directories, held open, and
// only the file a listing described: one replaced since, a symlink in its
// place, or a directory that became a symlink leading out of the root is
// refused; and through a directory moved out of the root while it is held
// open, only the files the listing saw there.
func TestOpenAs(t *testing.T) {
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
		f, err := tr.OpenAs(tt.rel, listed[tt.rel])
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
		if tt.rel == "results/d/1" { // d is held open: it goes, and 2 in it is another file now
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

// openFDs counts this process's open file descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd")
	}
	return len(fds)
}

// TestDirsBounded: a Tree going back and forth between two trees 255
// levels deep, a file at every level (as a merge moves staged files into
// place, the deepest first), holds at most maxOpenDirs directories open
// (and the one a rename pins), moves every file, and leaves nothing open
// once closed.
func TestDirsBounded(t *testing.T) {
	dir := t.TempDir()
	fds := openFDs(t)
	tr, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	deep := func(top string, level int) string { return top + strings.Repeat("/d", level) }
	for level := range 255 {
		if err := errors.Join(tr.MkdirAll(deep("staged", level), 0o755), tr.MkdirAll(deep("results", level), 0o755)); err != nil {
			t.Fatal(err)
		}
		if err := tr.WriteFile(deep("staged", level)+"/f", []byte("f"), 0o600); err != nil {
			t.Fatalf("level %d: %v", level, err)
		}
	}
	for level := 254; level >= 0; level-- {
		if err := tr.Rename(deep("staged", level)+"/f", deep("results", level)+"/f"); err != nil {
			t.Fatalf("level %d: %v", level, err)
		}
		if n := len(tr.dirs.open); n > maxOpenDirs+1 {
			t.Fatalf("level %d: %d directories open, over %d", level, n, maxOpenDirs+1)
		}
	}
	for level := range 255 {
		if b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(deep("results", level)), "f")); err != nil || string(b) != "f" {
			t.Fatalf("level %d: %q %v", level, b, err)
		}
	}
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	if now := openFDs(t); now != fds {
		t.Errorf("%d descriptors open after Close, %d before Open", now, fds)
	}
}

// TestDirsForgotten: a directory held open and then removed or renamed is
// not where the Tree's next operations on its path go: they reach what is
// there now.
func TestDirsForgotten(t *testing.T) {
	tests := []struct {
		name string
		away func(tr *Tree) error // removes or renames results/a, held open
	}{
		{"renamed", func(tr *Tree) error { return tr.Rename("results/a", "results/b") }},
		{"removed", func(tr *Tree) error { return tr.RemoveAll("results/a") }},
		{"its parent renamed", func(tr *Tree) error { return tr.Rename("results", "moved") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			fixture.WriteTree(t, dir, map[string]string{"results/a/x": "old"})
			tr, err := Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer tr.Close()
			if _, err := tr.Lstat("results/a/x"); err != nil { // results/a held open
				t.Fatal(err)
			}
			if err := tt.away(tr); err != nil {
				t.Fatal(err)
			}
			if _, err := tr.Lstat("results/a/x"); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("results/a/x after results/a went: %v, want it not there", err)
			}
			if err := tr.MkdirAll("results/a", 0o755); err != nil {
				t.Fatal(err)
			}
			if err := tr.WriteFile("results/a/y", []byte("new"), 0o600); err != nil {
				t.Fatal(err)
			}
			if b, err := os.ReadFile(filepath.Join(dir, "results", "a", "y")); err != nil || string(b) != "new" {
				t.Errorf("results/a/y on disk: %q %v", b, err)
			}
		})
	}
}
