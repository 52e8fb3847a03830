package atomicfile

import (
	"os"
	"path/filepath"
	"testing"
)

func TestWrite(t *testing.T) {
	cases := []struct {
		name string
		path func(dir string) string
		old  []byte
		mode os.FileMode
	}{
		{"new file", func(d string) string { return filepath.Join(d, "a.json") }, nil, 0o600},
		{"replaces", func(d string) string { return filepath.Join(d, "a.json") }, []byte("old content, longer than the new"), 0o644},
		{"makes the directory", func(d string) string { return filepath.Join(d, "x", "y", "a.json") }, nil, 0o600},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			p := c.path(dir)
			if c.old != nil {
				if err := os.WriteFile(p, c.old, 0o666); err != nil {
					t.Fatal(err)
				}
			}
			if err := Write(p, []byte("new"), c.mode); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(p)
			if err != nil || string(b) != "new" {
				t.Fatalf("content %q, %v; want %q", b, err, "new")
			}
			st, _ := os.Stat(p)
			if st.Mode().Perm() != c.mode {
				t.Errorf("mode %v, want %v", st.Mode().Perm(), c.mode)
			}
			entries, _ := os.ReadDir(filepath.Dir(p))
			if len(entries) != 1 {
				t.Errorf("directory holds %d entries after the write, want only the file (no temporaries left)", len(entries))
			}
		})
	}
}

func TestWriteFails(t *testing.T) {
	dir := t.TempDir()
	blocker := filepath.Join(dir, "file")
	if err := os.WriteFile(blocker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	// The parent is a regular file: nothing can be created under it.
	if err := Write(filepath.Join(blocker, "a.json"), []byte("x"), 0o600); err == nil {
		t.Fatal("wrote under a regular file")
	}
	// The target is a directory: the rename fails and no temporary is left.
	target := filepath.Join(dir, "sub")
	if err := os.Mkdir(target, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(target, "keep"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Write(target, []byte("x"), 0o600); err == nil {
		t.Fatal("replaced a non-empty directory")
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		t.Errorf("%d entries left in the directory, want 2 (no temporaries)", len(entries))
	}
}

// TestWriteIn: inside a root, a file is replaced as Write does it, and a
// name leading out of the root, by its text or through a symlink, writes
// nothing outside it.
func TestWriteIn(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "root")
	if err := os.MkdirAll(filepath.Join(dir, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("..", filepath.Join(dir, "up")); err != nil {
		t.Fatal(err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	cases := []struct {
		name    string
		ok      bool
		entries int // in the file's directory afterwards: no temporaries
	}{
		{"sub/a.json", true, 1},
		{"b.json", true, 3}, // sub, up and b.json
		{"../escape.json", false, 0},
		{"up/escape.json", false, 0},
	}
	for _, c := range cases {
		err := WriteIn(root, c.name, []byte("new"), 0o640)
		if (err == nil) != c.ok {
			t.Fatalf("%s: %v, want ok %v", c.name, err, c.ok)
		}
		if !c.ok {
			continue
		}
		p := filepath.Join(dir, filepath.FromSlash(c.name))
		b, err := os.ReadFile(p)
		if err != nil || string(b) != "new" {
			t.Errorf("%s: content %q, %v", c.name, b, err)
		}
		if st, _ := os.Stat(p); st.Mode().Perm() != 0o640 {
			t.Errorf("%s: mode %v, want 0640", c.name, st.Mode().Perm())
		}
		if entries, _ := os.ReadDir(filepath.Dir(p)); len(entries) != c.entries {
			t.Errorf("%s: %d entries in its directory, want %d (no temporaries)", c.name, len(entries), c.entries)
		}
	}
	if entries, _ := os.ReadDir(parent); len(entries) != 1 {
		t.Errorf("written outside the root: %v", entries)
	}
}
