package archive

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/polecat-sidecar/sidecar/sync"
	"github.com/polecat-sidecar/sidecar/sync/internal/fixture"
)

// keepPolicy lets cross what these tests keep.
var keepPolicy = sync.Policy{Include: []string{"results", "notes.md"}}

const lines = "one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\n"

// TestKeepContents: what Pack sends of files up to MaxKept is kept, byte
// for byte, in one file; bigger files, directories and symlinks are not.
func TestKeepContents(t *testing.T) {
	work := t.TempDir()
	root := filepath.Join(work, "root")
	big := strings.Repeat("x", MaxKept+1)
	fixture.WriteTree(t, root, map[string]string{
		"notes.md":          lines,
		"results/a.txt":     "a",
		"results/empty.txt": "",
		"results/big.bin":   big,
		"results/link":      "->a.txt",
		"results/sub/":      "",
	})
	c, m := keepTo(t, root, work)
	for _, tc := range []struct {
		path, want string
		kept       bool
	}{
		{"notes.md", lines, true},
		{"results/a.txt", "a", true},
		{"results/empty.txt", "", true},
		{"results/big.bin", "", false},
		{"results/link", "", false},
		{"results/sub", "", false},
		{"results/missing", "", false},
		{"../notes.md", "", false},
	} {
		b, err := fs.ReadFile(c, tc.path)
		if tc.kept != (err == nil) || string(b) != tc.want {
			t.Errorf("%s: kept %v (%v) %q, want kept %v %q", tc.path, err == nil, err, b, tc.kept, tc.want)
		}
	}
	if files, _ := m.Files(); files != 4 {
		t.Errorf("the manifest lists %d files, want 4", files)
	}
}

// keepTo packs root as a push does, keeping its contents in a file under
// dir, and opens them.
func keepTo(t *testing.T, root, dir string) (*Contents, *sync.Manifest) {
	t.Helper()
	kept := filepath.Join(dir, "kept.tar")
	f, err := os.Create(kept)
	if err != nil {
		t.Fatal(err)
	}
	m, _, err := Pack(context.Background(), root, keepPolicy, io.Discard, KeepContents(f))
	if err = errors.Join(err, f.Close()); err != nil {
		t.Fatal(err)
	}
	c, err := OpenContents(kept)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, m
}

// TestWriteContents: the contents of a received tree are kept from the
// tree for what the archive carried, from the old contents for what it
// marked unchanged (copied as they are when those are a *Contents, read
// file by file from any other fs.FS), and left out where neither has what
// the manifest says.
func TestWriteContents(t *testing.T) {
	work := t.TempDir()
	root := filepath.Join(work, "root")
	long := "results/" + strings.Repeat("l", 120) + ".txt" // a member with a long-name header before it
	fixture.WriteTree(t, root, map[string]string{"results/same.txt": "same", "results/changed.txt": "old", "results/lost.txt": "lost", long: "long"})
	hourAgo := time.Now().Add(-time.Hour)
	for _, f := range []string{"results/same.txt", "results/changed.txt", "results/lost.txt", long} {
		_ = os.Chtimes(filepath.Join(root, f), hourAgo, hourAgo) // older than Since's two seconds
	}
	old, base := keepTo(t, root, work)

	// The container changes one file and sends a delta against the base.
	fixture.WriteTree(t, root, map[string]string{"results/changed.txt": "new", "results/added.txt": "added"})
	var archive bytes.Buffer
	if _, _, err := Pack(context.Background(), root, keepPolicy, &archive, Since(base)); err != nil {
		t.Fatal(err)
	}
	tree := filepath.Join(work, "tree")
	theirs, err := UnpackSince(context.Background(), &archive, tree, keepPolicy, sync.Limits{}, base)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"results/same.txt": "same", "results/changed.txt": "new", "results/added.txt": "added", "results/lost.txt": "lost", long: "long"}
	tests := []struct {
		name    string
		prev    fs.FS
		changed map[string]string // what differs from want
		unused  []string          // kept, but Kept refuses it
	}{
		{name: "kept contents, copied as they are", prev: old},
		{name: "another fs.FS, read file by file, one file missing",
			prev: fsWithout{old, "results/lost.txt"}, changed: map[string]string{"results/lost.txt": "<none>"}},
		{name: "kept contents without one file",
			prev:    contentsOf(t, map[string]string{"results/same.txt": "same", "results/changed.txt": "old", long: "long"}),
			changed: map[string]string{"results/lost.txt": "<none>"}},
		{name: "kept contents whose file is another size: read, no longer hashes, left out",
			prev:    contentsOf(t, map[string]string{"results/same.txt": "same!", "results/lost.txt": "lost", long: "long"}),
			changed: map[string]string{"results/same.txt": "<none>"}},
		{name: "kept contents whose file has other bytes of its size: copied, and no merge uses them",
			prev:    contentsOf(t, map[string]string{"results/same.txt": "SAME", "results/lost.txt": "lost", long: "long"}),
			changed: map[string]string{"results/same.txt": "SAME"}, unused: []string{"results/same.txt"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			wrote, err := WriteContents(&out, theirs, os.DirFS(tree), tt.prev)
			if err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(t.TempDir(), "next.tar")
			if err := os.WriteFile(p, out.Bytes(), 0o600); err != nil {
				t.Fatal(err)
			}
			read, err := OpenContents(p)
			if err != nil {
				t.Fatal(err)
			}
			defer read.Close()
			// The index WriteContents made is the one reading the file
			// makes, and a Contents opened with it reads the same files.
			if !reflect.DeepEqual(wrote, read.Index()) {
				t.Errorf("WriteContents' index %+v, read from its file %+v", wrote, read.Index())
			}
			next, err := OpenIndexed(p, wrote)
			if err != nil {
				t.Fatal(err)
			}
			defer next.Close()
			idx := theirs.Index()
			for path, w := range want {
				if c, ok := tt.changed[path]; ok {
					w = c
				}
				b, err := fs.ReadFile(next, path)
				if err != nil {
					b = []byte("<none>")
				}
				if string(b) != w {
					t.Errorf("%s: kept %q, want %q", path, b, w)
				}
				if _, ok := Kept(next, idx[path]); ok == slices.Contains(tt.unused, path) && w != "<none>" {
					t.Errorf("%s: Kept says %v", path, ok)
				}
			}
		})
	}
}

// contentsOf is kept contents holding files, in the order of their paths.
func contentsOf(t *testing.T, files map[string]string) *Contents {
	t.Helper()
	p := filepath.Join(t.TempDir(), "kept.tar")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	tw := tar.NewWriter(f)
	for _, name := range slices.Sorted(maps.Keys(files)) {
		err = errors.Join(err, tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Size: int64(len(files[name])), Mode: 0o644}))
		_, werr := tw.Write([]byte(files[name]))
		err = errors.Join(err, werr)
	}
	if err = errors.Join(err, tw.Close(), f.Close()); err != nil {
		t.Fatal(err)
	}
	c, err := OpenContents(p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// fsWithout is an fs.FS with one path missing.
type fsWithout struct {
	fs.FS
	gone string
}

func (f fsWithout) Open(name string) (fs.File, error) {
	if name == f.gone {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	return f.FS.Open(name)
}

// TestContentsDamaged: kept contents that are cut short or not a tar file
// are refused when opened, and a merge then goes without them; a member
// whose bytes no longer hash as the base says is not used as a merge base.
func TestContentsDamaged(t *testing.T) {
	work := t.TempDir()
	root := filepath.Join(work, "root")
	fixture.WriteTree(t, root, map[string]string{"notes.md": lines})
	c, m := keepTo(t, root, work)
	c.Close()
	good, err := os.ReadFile(filepath.Join(work, "kept.tar"))
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{
		"cut in its header":  good[:100],
		"cut in its content": good[:512+10],
		"not tar":            bytes.Repeat([]byte("garbage!"), 200),
	} {
		p := filepath.Join(work, "damaged.tar")
		_ = os.WriteFile(p, b, 0o600)
		if c, err := OpenContents(p); err == nil {
			c.Close()
			t.Errorf("%s: opened", name)
		}
	}
	// Same length, other bytes: opens, but is no base for a merge.
	tampered := bytes.Replace(good, []byte("three"), []byte("THREE"), 1)
	p := filepath.Join(work, "tampered.tar")
	_ = os.WriteFile(p, tampered, 0o600)
	tc, err := OpenContents(p)
	if err != nil {
		t.Fatal(err)
	}
	defer tc.Close()
	e := m.Index()["notes.md"]
	if b, ok := Kept(tc, e); ok {
		t.Errorf("a tampered base was used: %q", b)
	}
	intact, err := OpenContents(filepath.Join(work, "kept.tar"))
	if err != nil {
		t.Fatal(err)
	}
	defer intact.Close()
	if b, ok := Kept(intact, e); !ok || string(b) != lines {
		t.Errorf("the intact base's content: %q, %v", b, ok)
	}
}

// TestContentsSize: what WriteContents writes is what ContentsSize says,
// whatever names and times the container gave its files (a long or
// non-ASCII name, or a time USTAR cannot hold, takes an extended header).
func TestContentsSize(t *testing.T) {
	long := "results/" + strings.Repeat("l", 150)
	tests := []struct {
		name  string
		path  string
		mtime time.Time
	}{
		{"short ASCII name", "results/a.txt", time.Unix(1700000000, 0)},
		{"long name", long, time.Unix(1700000000, 0)},
		{"non-ASCII name", "results/résumé.txt", time.Unix(1700000000, 0)},
		{"time before 1970", "results/old.txt", time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC)},
		{"time past USTAR's range", "results/far.txt", time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			content := strings.Repeat("x", 700)
			fixture.WriteTree(t, dir, map[string]string{tt.path: content})
			m := &sync.Manifest{Entries: []sync.Entry{{Path: tt.path, Type: sync.TypeFile, Size: int64(len(content)), Mode: 0o644,
				MTime: tt.mtime, SHA256: sync.HashBytes([]byte(content))}}}
			var out bytes.Buffer
			if _, err := WriteContents(&out, m, os.DirFS(dir), nil); err != nil {
				t.Fatal(err)
			}
			if got := ContentsSize(m, nil); got != int64(out.Len()) {
				t.Errorf("ContentsSize %d, WriteContents wrote %d bytes", got, out.Len())
			}
			// Next time the file is unchanged, copied from those
			// contents, and another is new.
			p := filepath.Join(t.TempDir(), "kept.tar")
			if err := os.WriteFile(p, out.Bytes(), 0o600); err != nil {
				t.Fatal(err)
			}
			prev, err := OpenContents(p)
			if err != nil {
				t.Fatal(err)
			}
			defer prev.Close()
			fixture.WriteTree(t, dir, map[string]string{"results/new.txt": "new"})
			next := &sync.Manifest{Entries: []sync.Entry{m.Entries[0], {Path: "results/new.txt", Type: sync.TypeFile, Size: 3, Mode: 0o644,
				MTime: time.Unix(1700000000, 0), SHA256: sync.HashBytes([]byte("new"))}}}
			next.Entries[0].Unchanged = true
			out.Reset()
			if _, err := WriteContents(&out, next, os.DirFS(dir), prev); err != nil {
				t.Fatal(err)
			}
			if got := ContentsSize(next, prev); got != int64(out.Len()) {
				t.Errorf("from kept contents: ContentsSize %d, WriteContents wrote %d bytes", got, out.Len())
			}
		})
	}
}

// TestOpenIndexed: an index opens only a file of the length it describes.
func TestOpenIndexed(t *testing.T) {
	c := contentsOf(t, map[string]string{"results/a.txt": "a"})
	ix := c.Index()
	p := filepath.Join(t.TempDir(), "kept.tar")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(f, io.NewSectionReader(c.f, 0, ix.size)); err != nil {
		t.Fatal(err)
	}
	f.Close()
	tests := []struct {
		name   string
		change func()
		ok     bool
	}{
		{"as written", func() {}, true},
		{"grown", func() { appendTo(t, p, "x") }, false},
		{"missing", func() { os.Remove(p) }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.change()
			got, err := OpenIndexed(p, ix)
			if (err == nil) != tt.ok {
				t.Fatalf("OpenIndexed: %v, want ok %v", err, tt.ok)
			}
			if err != nil {
				return
			}
			defer got.Close()
			if b, err := fs.ReadFile(got, "results/a.txt"); err != nil || string(b) != "a" {
				t.Errorf("read %q, %v", b, err)
			}
		})
	}
}

// appendTo appends s to the file at p.
func appendTo(t *testing.T, p, s string) {
	f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
}

// TestContentsHolds: kept contents hold a manifest when every file a base
// keeps is unchanged and in them at its size, and nothing else is.
func TestContentsHolds(t *testing.T) {
	c := contentsOf(t, map[string]string{"results/a.txt": "a", "results/b.txt": "bb"})
	file := func(p string, size int64, unchanged bool) sync.Entry {
		return sync.Entry{Path: p, Type: sync.TypeFile, Size: size, Unchanged: unchanged}
	}
	dir := sync.Entry{Path: "results", Type: sync.TypeDir}
	big := file("results/big.bin", MaxKept+1, false)
	tests := []struct {
		name    string
		entries []sync.Entry
		holds   bool
	}{
		{"the same files, unchanged", []sync.Entry{dir, file("results/a.txt", 1, true), file("results/b.txt", 2, true)}, true},
		{"and a file too big to keep", []sync.Entry{dir, file("results/a.txt", 1, true), file("results/b.txt", 2, true), big}, true},
		{"one changed", []sync.Entry{file("results/a.txt", 1, false), file("results/b.txt", 2, true)}, false},
		{"one of another size", []sync.Entry{file("results/a.txt", 3, true), file("results/b.txt", 2, true)}, false},
		{"one gone", []sync.Entry{file("results/a.txt", 1, true)}, false},
		{"one more", []sync.Entry{file("results/a.txt", 1, true), file("results/b.txt", 2, true), file("results/c.txt", 1, true)}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := c.Holds(&sync.Manifest{Entries: tt.entries}); got != tt.holds {
				t.Errorf("Holds = %v, want %v", got, tt.holds)
			}
		})
	}
}
