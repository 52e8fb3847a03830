package tree

import (
	"fmt"
	"io/fs"
	"path"
	"strings"
	"testing"

	"github.com/polecat-sidecar/sidecar/sync"
	"github.com/polecat-sidecar/sidecar/sync/internal/fixture"
)

// lookup is what view holds at rel, looked up one name at a time from
// the root, following no link: the view under it, and its target when
// it is a symlink.
func lookup(view sync.LinkView, rel string) (dir sync.LinkView, target string, isLink bool) {
	dir = view
	for name := range strings.SplitSeq(rel, "/") {
		if dir == nil {
			return nil, "", false
		}
		dir, target, isLink = dir.Child(name)
	}
	return dir, target, isLink
}

// TestView: a view of a tree on disk finds symlinks and their targets,
// walks into directories, and finds nothing under a symlink, under a file,
// under what is missing, nor at a name the Tree's operations refuse (a
// backslash, ".", "..").
func TestView(t *testing.T) {
	dir := t.TempDir()
	fixture.WriteTree(t, dir, map[string]string{
		"results/link":       "->../other",
		"results/a/up":       "->../..",
		"results/a/b/x":      "x",
		"results/f":          "f",
		"results/back\\s/l":  "->x",
		"results/back\\s/f":  "f",
		"other/y":            "y",
		"results/empty-dir/": "",
	})
	tr, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	v := tr.View()
	defer v.Close()
	cases := []struct {
		rel    string
		target string // "" for no link
		isDir  bool   // the view walks into it
	}{
		{"results/link", "../other", false},
		{"results/a/up", "../..", false},
		{"results/a", "", true},
		{"results/empty-dir", "", true},
		{"results/f", "", false},
		{"results/link/y", "", false},
		{"results/f/x", "", false},
		{"results/nothing/x", "", false},
		{"results/back\\s", "", false},
		{"results/back\\s/l", "", false},
		{"results/..", "", false},
		{"results/./link", "", false},
	}
	for _, c := range cases {
		d, target, isLink := lookup(v, c.rel)
		if isLink != (c.target != "") || target != c.target || (d != nil) != c.isDir {
			t.Errorf("%s: link %v to %q, directory %v; want a link to %q, directory %v", c.rel, isLink, target, d != nil, c.target, c.isDir)
		}
	}
}

// TestViewChain: a view holds open the directories from the root to the
// last it looked in, and no others; what it found is kept, so looking at
// it again opens nothing; Close closes what it holds.
func TestViewChain(t *testing.T) {
	dir := t.TempDir()
	deep := "results" + strings.Repeat("/d", 100)
	fixture.WriteTree(t, dir, map[string]string{deep + "/f": "f", "results/e/f": "f"})
	fds := openFDs(t)
	tr, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	v := tr.View()
	steps := []struct {
		name string
		rel  string
		held int // directories the view holds open after looking it up
	}{
		{"100 levels down", deep + "/f", 101},
		{"to another directory", "results/e/f", 2},
		{"100 levels down again: kept", deep + "/f", 2},
		{"a new name 100 levels down", deep + "/g", 101},
		{"a new name in the other", "results/e/g", 2},
	}
	for _, s := range steps {
		lookup(v, s.rel)
		if len(v.chain) != s.held {
			t.Errorf("%s: %d directories held, want %d", s.name, len(v.chain), s.held)
		}
		if now := openFDs(t); now != fds+1+s.held {
			t.Errorf("%s: %d descriptors open, want %d (the root and %d held)", s.name, now, fds+1+s.held, s.held)
		}
	}
	v.Close()
	if now := openFDs(t); now != fds+1 {
		t.Errorf("%d descriptors open after the view's Close, want %d (the root)", now, fds+1)
	}
}

// Fuzzed trees are made of these names, and their links' targets of these
// components.
var (
	fuzzNames      = []string{"r", "a", "b", "l"}
	fuzzComponents = []string{"..", ".", "", "r", "a", "b", "l", "x"}
)

// fuzzTree makes a tree in tr from b, an entry at a time: a kind, a path
// 1 to 3 names deep and, for a symlink, 1 to 5 components of its target.
// What the Tree refuses (a path through a file or link) is left out.
func fuzzTree(tr *Tree, b []byte) {
	for len(b) >= 2 {
		kind, p := b[0]%3, int(b[1])
		b = b[2:]
		names := make([]string, 1+p%3)
		for i, n := 0, p/3; i < len(names); i, n = i+1, n/4 {
			names[i] = fuzzNames[n%4]
		}
		rel := strings.Join(names, "/")
		if dir := path.Dir(rel); dir != "." {
			_ = tr.MkdirAll(dir, 0o755)
		}
		switch kind {
		case 0:
			_ = tr.MkdirAll(rel, 0o755)
		case 1:
			_ = tr.WriteFile(rel, []byte("f"), 0o644)
		default:
			if len(b) == 0 {
				return
			}
			n := 1 + int(b[0])%5
			b = b[1:]
			var target []string
			for ; n > 0 && len(b) > 0; n, b = n-1, b[1:] {
				target = append(target, fuzzComponents[int(b[0])%len(fuzzComponents)])
			}
			_ = tr.Symlink(strings.Join(target, "/"), rel)
		}
	}
}

// manifestOf is what tr holds, as a manifest's index.
func manifestOf(t *testing.T, tr *Tree) map[string]*sync.Entry {
	idx := map[string]*sync.Entry{}
	names, err := tr.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		err := tr.WalkAll(name, func(rel string, fi fs.FileInfo) {
			e := &sync.Entry{Path: rel, Type: sync.TypeFile}
			switch {
			case fi.IsDir():
				e.Type = sync.TypeDir
			case fi.Mode()&fs.ModeSymlink != 0:
				e.Type = sync.TypeSymlink
				if e.Target, err = tr.Readlink(rel); err != nil {
					t.Fatal(err)
				}
			}
			idx[rel] = e
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return idx
}

// FuzzJudgeLink makes random trees of directories, files and relative,
// chained, looping and ".."-laden symlinks on disk, and judges each link,
// and each link's target from every directory, four ways: through the
// tree's View and through ManifestView of its manifest, one name at a
// time, and as JudgeLink did before (fixture.JudgeByPath), every prefix
// looked up by its path in the manifest and on disk (Lstat and Readlink
// through the Tree). All four verdicts must be the same error, or none.
func FuzzJudgeLink(f *testing.F) {
	// r/a/b -> l/../../x, r/a/l -> ../..: the chain that once escaped.
	f.Add([]byte{0, 13, 2, 158, 1, 0, 0, 2, 110, 3, 6, 0, 0, 7})
	// a -> b, b -> a: a loop; l -> r/x, r a file.
	f.Add([]byte{2, 3, 0, 5, 2, 6, 0, 4, 1, 0, 2, 9, 1, 3, 7})
	// r/l -> b/../a, r/a -> ./b///., a -> r/l/../..: chains inside.
	f.Add([]byte{0, 25, 2, 37, 2, 5, 0, 4, 2, 13, 4, 1, 5, 2, 2, 1, 2, 3, 3, 3, 6, 0, 0})
	policy := sync.Policy{Include: []string{"r"}}
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > 90 {
			return
		}
		tr, err := Open(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		defer tr.Close()
		fuzzTree(tr, b)
		idx := manifestOf(t, tr)
		disk := tr.View()
		defer disk.Close()
		manifest := sync.ManifestView(idx)
		byPath := func(rel string) (string, bool) {
			if e := idx[rel]; e != nil && e.Type == sync.TypeSymlink {
				return e.Target, true
			}
			return "", false
		}
		diskByPath := func(rel string) (string, bool) {
			fi, err := tr.Lstat(rel)
			if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
				return "", false
			}
			target, err := tr.Readlink(rel)
			return target, err == nil
		}
		dirs := []string{"."}
		for rel, e := range idx {
			if e.Type == sync.TypeDir {
				dirs = append(dirs, rel)
			}
		}
		for _, l := range idx {
			if l.Type != sync.TypeSymlink {
				continue
			}
			rels := []string{l.Path}
			for _, d := range dirs {
				rels = append(rels, path.Join(d, "p"))
			}
			for _, rel := range rels {
				verdicts := []string{
					errString(policy.JudgeLink(disk, rel, l.Target)),
					errString(policy.JudgeLink(manifest, rel, l.Target)),
					errString(fixture.JudgeByPath(policy, byPath, rel, l.Target)),
					errString(fixture.JudgeByPath(policy, diskByPath, rel, l.Target)),
				}
				for _, v := range verdicts[1:] {
					if v != verdicts[0] {
						t.Fatalf("%s -> %s in %v:\nView         %s\nManifestView %s\nby path      %s\non disk      %s", rel, l.Target, entries(idx), verdicts[0], verdicts[1], verdicts[2], verdicts[3])
					}
				}
			}
		}
	})
}

// errString is err's message, "" for none.
func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// entries shows a manifest's index for a failure.
func entries(idx map[string]*sync.Entry) []string {
	var out []string
	for rel, e := range idx {
		out = append(out, fmt.Sprintf("%s %s%s", rel, e.Type, map[bool]string{true: " -> " + e.Target}[e.Type == sync.TypeSymlink]))
	}
	return out
}
