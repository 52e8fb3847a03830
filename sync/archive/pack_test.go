package archive

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/polecat-sidecar/sidecar/sync"
	"github.com/polecat-sidecar/sidecar/sync/internal/fixture"
)

// listTree lists what is under root: path -> content, mode and mtime for
// files, target for symlinks.
func listTree(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == root {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		fi, _ := os.Lstat(p)
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			out[rel] = "->" + target
		case fi.IsDir():
			out[rel+"/"] = fi.Mode().Perm().String() + " " + fi.ModTime().UTC().Format(time.RFC3339)
		default:
			b, _ := os.ReadFile(p)
			out[rel] = string(b) + " " + fi.Mode().Perm().String() + " " + fi.ModTime().UTC().Format(time.RFC3339)
		}
		return nil
	})
	return out
}

var testPolicy = sync.Policy{Include: []string{".claude/settings.json", ".claude/hooks", "results"}}

func TestPackExtractRoundTrip(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	fixture.WriteTree(t, src, map[string]string{
		".claude/settings.json":    `{"hooks":{}}`,
		".claude/credentials.json": "secret",
		".claude/hooks/stop.sh":    "#!/bin/sh\n",
		"results/out.txt":          "result",
		"results/deep/a.bin":       string(bytes.Repeat([]byte{0, 1, 2}, 100000)),
		"results/empty/":           "",
		"results/latest":           "->out.txt",
		"results/escape":           "->../../etc/passwd",
		"results/to-secret":        "->../.claude/credentials.json",
		"results/.ssh/id_rsa":      "key",
		"results/server.pem":       "cert",
		"unlisted.txt":             "not whitelisted",
	})
	_ = os.Chmod(filepath.Join(src, ".claude/hooks/stop.sh"), 0o755)
	old := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	_ = os.Chtimes(filepath.Join(src, "results/out.txt"), old, old)

	var buf bytes.Buffer
	m, skipped, err := Pack(context.Background(), src, testPolicy, &buf)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(skipped, []string{"results/escape", "results/to-secret"}) {
		t.Errorf("skipped %v, want the two symlinks leading out", skipped)
	}
	// The same tree packs to the same bytes.
	var again bytes.Buffer
	if _, _, err := Pack(context.Background(), src, testPolicy, &again); err != nil || !bytes.Equal(buf.Bytes(), again.Bytes()) {
		t.Errorf("packing twice differs (%v)", err)
	}
	got, err := Extract(context.Background(), bytes.NewReader(buf.Bytes()), dst, testPolicy, sync.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Entries) != len(m.Entries) {
		t.Errorf("extracted %d entries, packed %d", len(got.Entries), len(m.Entries))
	}
	want, have := listTree(t, src), listTree(t, dst)
	for _, gone := range []string{".claude/credentials.json", "results/escape", "results/to-secret", "results/.ssh/", "results/.ssh/id_rsa", "results/server.pem", "unlisted.txt"} {
		delete(want, gone)
		if _, ok := have[gone]; ok {
			t.Errorf("%s crossed", gone)
		}
	}
	delete(want, ".claude/") // a directory on the way: made, its own bits not carried over exactly
	sameTree(t, "extracted", have, want, ".claude/")
	// Whatever dst already had outside the archive stays. Extracting
	// again over the tree, with one directory gone (moved back whole) and
	// the rest in place (replaced file by file), gives the same tree.
	_ = os.WriteFile(filepath.Join(dst, "mine.txt"), []byte("keep"), 0o644)
	if err := os.RemoveAll(filepath.Join(dst, "results/deep")); err != nil {
		t.Fatal(err)
	}
	if _, err := Extract(context.Background(), bytes.NewReader(buf.Bytes()), dst, testPolicy, sync.Limits{}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dst, "mine.txt")); string(b) != "keep" {
		t.Error("a file the archive does not name was touched")
	}
	sameTree(t, "extracted again", listTree(t, dst), want, ".claude/", "mine.txt")
}

// sameTree reports where have, a listTree, differs from want, leaving
// out the paths in skip.
func sameTree(t *testing.T, what string, have, want map[string]string, skip ...string) {
	t.Helper()
	for _, k := range skip {
		delete(have, k)
	}
	for k, v := range want {
		if have[k] != v {
			t.Errorf("%s, %s: got %q, want %q", what, k, have[k], v)
		}
	}
	if len(have) != len(want) {
		t.Errorf("%s, the tree is %v, want %v", what, have, want)
	}
}

// TestPackSince: files as the base lists them are left out of the archive
// and taken from the base by the receiver; an archive referring to a base
// the receiver does not have is refused with ErrBaseMismatch.
func TestPackSince(t *testing.T) {
	src := t.TempDir()
	big := make([]byte, 100<<10)
	_, _ = rand.Read(big)
	fixture.WriteTree(t, src, map[string]string{"results/a.txt": string(big), "results/b.txt": "b"})
	old := time.Now().Add(-time.Hour)
	for _, f := range []string{"results/a.txt", "results/b.txt"} {
		_ = os.Chtimes(filepath.Join(src, f), old, old)
	}
	var first bytes.Buffer
	base, _, err := Pack(context.Background(), src, testPolicy, &first)
	if err != nil {
		t.Fatal(err)
	}
	_ = os.WriteFile(filepath.Join(src, "results/b.txt"), []byte("b changed"), 0o644)
	var delta bytes.Buffer
	m, _, err := Pack(context.Background(), src, testPolicy, &delta, Since(base))
	if err != nil {
		t.Fatal(err)
	}
	unchanged := map[string]bool{}
	for _, e := range m.Entries {
		unchanged[e.Path] = e.Unchanged
	}
	if !unchanged["results/a.txt"] || unchanged["results/b.txt"] {
		t.Fatalf("unchanged marks %v, want a.txt only", unchanged)
	}
	if delta.Len() > first.Len()/10 {
		t.Errorf("the delta (%d bytes) is not smaller than the full archive (%d)", delta.Len(), first.Len())
	}
	got, err := UnpackSince(context.Background(), bytes.NewReader(delta.Bytes()), t.TempDir(), testPolicy, sync.Limits{}, base)
	if err != nil {
		t.Fatal(err)
	}
	if files, _ := got.Resolved().Files(); files != 2 {
		t.Errorf("resolved manifest lists %d files, want 2", files)
	}
	if _, err := UnpackSince(context.Background(), bytes.NewReader(delta.Bytes()), t.TempDir(), testPolicy, sync.Limits{}, nil); !errors.Is(err, ErrBaseMismatch) {
		t.Errorf("without the base: %v, want ErrBaseMismatch", err)
	}
}

func TestSizeAndProgress(t *testing.T) {
	src := t.TempDir()
	fixture.WriteTree(t, src, map[string]string{"results/a": "aaaa", "results/b/c": "cc", "results/.ssh/k": "secret", "other": "x"})
	files, bytes, err := Size(src, testPolicy)
	if err != nil || files != 2 || bytes != 6 {
		t.Fatalf("Size: %d files, %d bytes, %v; want 2 and 6", files, bytes, err)
	}
	var lastFiles int
	var lastBytes int64
	if _, _, err := Pack(context.Background(), src, testPolicy, io.Discard, WithProgress(func(f int, b int64) { lastFiles, lastBytes = f, b })); err != nil {
		t.Fatal(err)
	}
	if lastFiles != files || lastBytes != bytes {
		t.Errorf("progress ended at %d files, %d bytes; Size said %d, %d", lastFiles, lastBytes, files, bytes)
	}
}

// TestPackNonUTF8: a name that is not UTF-8 is left out and reported, not
// sent in an archive its receiver would refuse whole.
func TestPackNonUTF8(t *testing.T) {
	root := t.TempDir()
	fixture.WriteTree(t, root, map[string]string{"results/caf\xe9": "x", "results/ok": "ok"})
	var buf bytes.Buffer
	m, skipped, err := Pack(context.Background(), root, testPolicy, &buf)
	if err != nil {
		t.Fatal(err)
	}
	if len(skipped) != 1 || len(m.Skipped) != 1 {
		t.Errorf("skipped %v (manifest %v), want the one name", skipped, m.Skipped)
	}
	if _, err := Unpack(context.Background(), &buf, t.TempDir(), testPolicy, sync.Limits{}); err != nil {
		t.Errorf("the receiver refused it: %v", err)
	}
}

// TestPackRewrite: a file Rewrite matches is sent as its function makes
// it, its manifest entry (size, hash) describing what was sent, and the
// file on disk stays as it was; one too large to rewrite, or one the
// function refuses, fails the pack.
func TestPackRewrite(t *testing.T) {
	upper := func(b []byte) ([]byte, error) { return bytes.ToUpper(b), nil }
	refuse := func([]byte) ([]byte, error) { return nil, errors.New("not this one") }
	isSettings := func(rel string) bool { return rel == ".claude/settings.json" }
	tests := []struct {
		name     string
		settings string
		f        func([]byte) ([]byte, error)
		want     string // the extracted settings, or the pack's error
		fails    bool
	}{
		{"rewritten", "/home/x/gt prime", upper, "/HOME/X/GT PRIME", false},
		{"grown", "ab", func(b []byte) ([]byte, error) { return bytes.Repeat(b, 1000), nil }, string(bytes.Repeat([]byte("ab"), 1000)), false},
		{"refused", "{}", refuse, "rewriting .claude/settings.json: not this one", true},
		{"too large", string(bytes.Repeat([]byte("x"), MaxRewrite+1)), upper, "larger than", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src, dst := t.TempDir(), t.TempDir()
			fixture.WriteTree(t, src, map[string]string{".claude/settings.json": tt.settings, "results/a.txt": "/home/x/gt"})
			var buf bytes.Buffer
			m, _, err := Pack(context.Background(), src, testPolicy, &buf, Rewrite(isSettings, tt.f))
			if tt.fails {
				if err == nil || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("Pack: %v, want an error with %q", err, tt.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if _, err := Extract(context.Background(), &buf, dst, testPolicy, sync.Limits{}); err != nil {
				t.Fatalf("the receiver refused the rewritten archive: %v", err)
			}
			for rel, want := range map[string]string{".claude/settings.json": tt.want, "results/a.txt": "/home/x/gt"} {
				if b, _ := os.ReadFile(filepath.Join(dst, rel)); string(b) != want {
					t.Errorf("extracted %s holds %.40q, want %.40q", rel, b, want)
				}
			}
			if e := m.Index()[".claude/settings.json"]; e == nil || e.Size != int64(len(tt.want)) {
				t.Errorf("manifest entry %+v, want the rewritten size %d", e, len(tt.want))
			}
			if b, _ := os.ReadFile(filepath.Join(src, ".claude/settings.json")); string(b) != tt.settings {
				t.Errorf("the packed tree's file changed to %q", b)
			}
		})
	}
}
