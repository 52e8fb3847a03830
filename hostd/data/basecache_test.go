package data

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	datasync "github.com/polecat-sidecar/sidecar/sync"
	"github.com/polecat-sidecar/sidecar/sync/archive"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// keepBase makes files (path to content) the polecat's base as a pull
// does: the contents written by WriteContents from a tree, then
// replaceBase with their index.
func keepBase(t *testing.T, s *Service, id wire.Identity, files map[string]string) *datasync.Manifest {
	t.Helper()
	dir := t.TempDir()
	m := &datasync.Manifest{Version: datasync.ManifestVersion}
	for p, c := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
		m.Entries = append(m.Entries, datasync.Entry{Path: p, Type: datasync.TypeFile, Mode: 0o644, MTime: time.Unix(1700000000, 0),
			Size: int64(len(c)), SHA256: datasync.HashBytes([]byte(c))})
	}
	f, err := s.newContents(id)
	if err != nil {
		t.Fatal(err)
	}
	ix, err := archive.WriteContents(f, m, os.DirFS(dir), nil)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := s.replaceBase(id, f.Name(), m, ix); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestBaseCache: a base kept is loaded from memory while its files are
// the ones kept, from disk when anything else changed them, and what
// loadBase returns is the caller's to change.
func TestBaseCache(t *testing.T) {
	id := wire.Identity{Rig: "gastown", Name: "furiosa"}
	tests := []struct {
		name   string
		change func(t *testing.T, s *Service) // after the base is kept
		cached bool
		want   string // results/a.txt as loadBase's contents hold it
	}{
		{"as kept", func(*testing.T, *Service) {}, true, "one"},
		{"base.json rewritten", func(t *testing.T, s *Service) {
			other := &datasync.Manifest{Version: datasync.ManifestVersion}
			if err := os.WriteFile(filepath.Join(s.baseDir(id), "base.json"), []byte(mustJSON(t, other)), 0o600); err != nil {
				t.Fatal(err)
			}
		}, false, "one"},
		{"base.tar replaced", func(t *testing.T, s *Service) {
			keepElsewhere(t, s, id, map[string]string{"results/a.txt": "two"})
		}, false, "two"},
		{"base removed", func(t *testing.T, s *Service) {
			if err := os.RemoveAll(s.baseDir(id)); err != nil {
				t.Fatal(err)
			}
		}, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newService(t)
			keepBase(t, s, id, map[string]string{"results/a.txt": "one", "results/b.txt": "bee"})
			tt.change(t, s)
			jsonInfo, _ := os.Stat(filepath.Join(s.baseDir(id), "base.json"))
			tarInfo, _ := os.Stat(filepath.Join(s.baseDir(id), "base.tar"))
			if _, _, ok := s.bases.get(id, jsonInfo, tarInfo); ok != tt.cached {
				t.Errorf("cached %v, want %v", ok, tt.cached)
			}
			m, c := s.loadBase(id)
			if tt.want == "" {
				if m != nil || c != nil {
					t.Errorf("loadBase of a removed base: %v, %v", m, c)
				}
				return
			}
			if c == nil {
				t.Fatal("no contents")
			}
			defer c.Close()
			if b, err := fs.ReadFile(c, "results/a.txt"); err != nil || string(b) != tt.want {
				t.Errorf("results/a.txt: %q, %v; want %q", b, err, tt.want)
			}
			// Loaded from disk, it is cached for next time.
			if _, _, ok := s.bases.get(id, statOf(t, s, id, "base.json"), statOf(t, s, id, "base.tar")); !ok {
				t.Error("not cached after loadBase")
			}
			// The caller's copy: changing it changes nothing kept.
			if len(m.Entries) > 0 {
				m.Entries[0].Path = "changed"
				again, c2 := s.loadBase(id)
				c2.Close()
				if again.Entries[0].Path == "changed" {
					t.Error("a change to loadBase's manifest reached the cache")
				}
			}
		})
	}
}

// keepElsewhere replaces the base's contents and manifest behind the
// cache's back, as another program would.
func keepElsewhere(t *testing.T, s *Service, id wire.Identity, files map[string]string) {
	other := newService(t)
	m := keepBase(t, other, id, files)
	b, err := os.ReadFile(filepath.Join(other.baseDir(id), "base.tar"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(s.baseDir(id), "base.tar"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(s.baseDir(id), "base.json"), []byte(mustJSON(t, m)), 0o600); err != nil {
		t.Fatal(err)
	}
}

func statOf(t *testing.T, s *Service, id wire.Identity, name string) os.FileInfo {
	fi, err := os.Stat(filepath.Join(s.baseDir(id), name))
	if err != nil {
		t.Fatal(err)
	}
	return fi
}

// TestBaseCacheBound: the cache holds at most maxCachedBytes, dropping
// the least recently used base, and no base costing more than it all;
// long paths count for what they hold.
func TestBaseCacheBound(t *testing.T) {
	var c baseCache
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("p", 1000)
	one := baseCost(&datasync.Manifest{Entries: []datasync.Entry{{Path: long}}})
	manifest := func(cost int64) *datasync.Manifest {
		m := &datasync.Manifest{Entries: make([]datasync.Entry, cost/one)}
		for i := range m.Entries {
			m.Entries[i].Path = long
		}
		return m
	}
	ids := make([]wire.Identity, 4)
	for i := range ids {
		ids[i] = wire.Identity{Rig: "r", Name: fmt.Sprintf("p%d", i)}
	}
	third := int64(maxCachedBytes / 3)
	c.put(ids[0], manifest(third), nil, fi, fi)
	c.put(ids[1], manifest(third), nil, fi, fi)
	c.put(ids[2], manifest(third), nil, fi, fi)
	c.get(ids[0], fi, fi) // p0 used: p1 is now the least recently used
	c.put(ids[3], manifest(third), nil, fi, fi)
	if c.bytes > maxCachedBytes {
		t.Errorf("%d bytes held, over %d", c.bytes, maxCachedBytes)
	}
	for i, want := range []bool{true, false, true, true} {
		if _, _, ok := c.get(ids[i], fi, fi); ok != want {
			t.Errorf("%s cached %v, want %v", ids[i], ok, want)
		}
	}
	c.put(ids[1], manifest(maxCachedBytes+one), nil, fi, fi)
	if _, _, ok := c.get(ids[1], fi, fi); ok {
		t.Error("a base costing more than the cache was kept")
	}
	if c.bytes > maxCachedBytes {
		t.Errorf("%d bytes held, over %d", c.bytes, maxCachedBytes)
	}
}

func mustJSON(t *testing.T, m *datasync.Manifest) string {
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestNewBaseContentsUnchanged: a transfer that changed none of the files
// a base keeps leaves base.tar as it is; one that changed any writes new
// contents.
func TestNewBaseContentsUnchanged(t *testing.T) {
	id := wire.Identity{Rig: "gastown", Name: "furiosa"}
	s := newService(t)
	m := keepBase(t, s, id, map[string]string{"results/a.txt": "one", "results/b.txt": "bee"})
	_, cur := s.loadBase(id)
	defer cur.Close()
	same := m.Resolved()
	for i := range same.Entries {
		same.Entries[i].Unchanged = true
	}
	p, ix, err := s.newBaseContents(id, same, os.DirFS(t.TempDir()), cur)
	if err != nil || p != "" || ix != cur.Index() {
		t.Errorf("unchanged: wrote %q (index %p, current %p), %v", p, ix, cur.Index(), err)
	}
	dir := t.TempDir()
	changed := m.Resolved()
	for i := range changed.Entries {
		changed.Entries[i].Unchanged = changed.Entries[i].Path != "results/a.txt"
		if !changed.Entries[i].Unchanged {
			if err := os.MkdirAll(filepath.Join(dir, "results"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "results", "a.txt"), []byte("one"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	p, _, err = s.newBaseContents(id, changed, os.DirFS(dir), cur)
	if err != nil || p == "" {
		t.Fatalf("changed: wrote %q, %v", p, err)
	}
	os.Remove(p)
}
