package archive

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/polecat-sidecar/sidecar/sync"
	"github.com/polecat-sidecar/sidecar/sync/internal/fixture"
	"github.com/polecat-sidecar/sidecar/sync/tree"
)

func TestExtractHostile(t *testing.T) {
	hostilePolicy := sync.Policy{Include: []string{"results"}}
	typed := func(name string, typ byte) fixture.Member {
		return fixture.Member{Hdr: tar.Header{Name: name, Typeflag: typ, Mode: 0o644, Linkname: "results/a", ModTime: time.Unix(1700000000, 0)}}
	}
	setuid := fixture.File("results/su", "x")
	setuid.Hdr.Mode = 0o4755
	big := fixture.Member{Hdr: tar.Header{Name: "results/sparse", Typeflag: tar.TypeReg, Mode: 0o644, Size: 10 << 30}}
	short := fixture.File("results/short", "0123456789")
	cases := []struct {
		name  string
		data  func() []byte
		want  string
		limit *sync.Limits
	}{
		{"path traversal", func() []byte {
			return fixture.Archive(t, []fixture.Member{fixture.Dir("results"), fixture.File("results/../../etc/x", "x")})
		}, "not a clean path", nil},
		{"absolute name", func() []byte { return fixture.Archive(t, []fixture.Member{fixture.File("/etc/passwd", "x")}) }, "not a clean path", nil},
		{"dot-dot name", func() []byte { return fixture.Archive(t, []fixture.Member{fixture.File("..", "x")}) }, "not a clean path", nil},
		{"symlink out", func() []byte {
			return fixture.Archive(t, []fixture.Member{fixture.Dir("results"), fixture.Link("results/l", "../../../etc")})
		}, "outside the data root", nil},
		{"symlink to a secret", func() []byte {
			return fixture.Archive(t, []fixture.Member{fixture.Dir("results"), fixture.Link("results/l", "../.ssh")})
		}, "which is not a path that crosses", nil},
		{"write through a symlink", func() []byte {
			return fixture.Archive(t, []fixture.Member{fixture.Dir("results"), fixture.Dir("results/d"), fixture.Link("results/l", "d"), fixture.File("results/l/x", "x")})
		}, "through the symlink", nil},
		{"hard link", func() []byte {
			return fixture.Archive(t, []fixture.Member{fixture.Dir("results"), typed("results/h", tar.TypeLink)})
		}, "hard link", nil},
		{"device node", func() []byte {
			return fixture.Archive(t, []fixture.Member{fixture.Dir("results"), typed("results/d", tar.TypeChar)})
		}, "character device", nil},
		{"fifo", func() []byte {
			return fixture.Archive(t, []fixture.Member{fixture.Dir("results"), typed("results/f", tar.TypeFifo)})
		}, "fifo", nil},
		{"setuid file", func() []byte { return fixture.Archive(t, []fixture.Member{fixture.Dir("results"), setuid}) }, "setuid", nil},
		{"10 GB sparse member", func() []byte { return fixture.ArchiveRaw(t, []fixture.Member{fixture.Dir("results"), big}) }, "file size limit of 536870912 (sync.max_file_size)", nil},
		{"decompression bomb", func() []byte {
			return fixture.Archive(t, []fixture.Member{fixture.Dir("results"), fixture.File("results/zeros", string(make([]byte, 32<<20)))})
		}, "compression ratio limit of 1000 (sync.max_ratio)", nil},
		{"total size", func() []byte {
			return fixture.Archive(t, []fixture.Member{fixture.Dir("results"), fixture.File("results/a", strings.Repeat("a", 600)), fixture.File("results/b", strings.Repeat("b", 600))})
		}, "total size limit of 1000 (sync.max_bytes)", &sync.Limits{MaxBytes: 1000}},
		{"truncated stream", func() []byte {
			b := fixture.Archive(t, []fixture.Member{fixture.Dir("results"), fixture.File("results/a", strings.Repeat("a", 100000))})
			return b[:len(b)/2]
		}, "archive refused", nil},
		{"no manifest", func() []byte {
			return fixture.ArchiveRaw(t, []fixture.Member{fixture.Dir("results"), fixture.File("results/a", "a")})
		}, "ends before its manifest", nil},
		{"member not in the manifest", func() []byte {
			ms := []fixture.Member{fixture.Dir("results"), fixture.File("results/a", "a")}
			man := fixture.ManifestOf(ms[:1])
			return fixture.ArchiveRaw(t, append(ms, man))
		}, "2 members, the manifest lists 1", nil},
		{"content differs from the manifest", func() []byte {
			ms := []fixture.Member{fixture.Dir("results"), fixture.File("results/a", "a")}
			man := fixture.ManifestOf([]fixture.Member{fixture.Dir("results"), fixture.File("results/a", "b")})
			return fixture.ArchiveRaw(t, append(ms, man))
		}, "differs from its manifest entry", nil},
		{"declared size larger than sent", func() []byte {
			b := fixture.Archive(t, []fixture.Member{fixture.Dir("results"), short})
			var raw bytes.Buffer // rewrite: header says 10, stream ends after 5
			zr, _ := zstd.NewReader(bytes.NewReader(b))
			tarBytes, _ := io.ReadAll(zr)
			raw.Write(tarBytes[:1024+5])
			var out bytes.Buffer
			zw, _ := zstd.NewWriter(&out)
			_, _ = zw.Write(raw.Bytes())
			_ = zw.Close()
			return out.Bytes()
		}, "archive refused", nil},
		{"duplicate name", func() []byte {
			return fixture.Archive(t, []fixture.Member{fixture.Dir("results"), fixture.File("results/a", "1"), fixture.File("results/a", "2")})
		}, "appears twice", nil},
		{"blacklisted path sent anyway", func() []byte {
			return fixture.Archive(t, []fixture.Member{fixture.Dir("results"), fixture.Dir("results/.ssh"), fixture.File("results/.ssh/authorized_keys", "ssh-ed25519 AAA")})
		}, "not a path the policy lets cross", nil},
		{"not whitelisted", func() []byte { return fixture.Archive(t, []fixture.Member{fixture.File("notes.txt", "x")}) }, "not a path the policy lets cross", nil},
		{"member before its directory", func() []byte { return fixture.Archive(t, []fixture.Member{fixture.File("results/a", "x")}) }, "comes before its directory", nil},
		{"back into a directory it left", func() []byte {
			return fixture.Archive(t, []fixture.Member{fixture.Dir("results"), fixture.Dir("results/a"), fixture.Dir("results/b"), fixture.File("results/a/x", "x")})
		}, `"results/a/x" comes after the archive left "results/a"`, nil},
		{"members after the manifest", func() []byte {
			ms := []fixture.Member{fixture.Dir("results")}
			return fixture.ArchiveRaw(t, append(append(ms, fixture.ManifestOf(ms)), fixture.File("results/late", "x")))
		}, "after the manifest", nil},
		{"not zstd", func() []byte { return []byte("PK\x03\x04 a zip file, say") }, "archive refused", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			parent := t.TempDir()
			dst := filepath.Join(parent, "data")
			fixture.WriteTree(t, dst, map[string]string{"results/existing": "untouched", "other": "kept"})
			before := listTree(t, dst)
			lim := sync.Limits{}
			if c.limit != nil {
				lim = *c.limit
			}
			_, err := Extract(context.Background(), bytes.NewReader(c.data()), dst, hostilePolicy, lim)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one saying %q", err, c.want)
			}
			after := listTree(t, dst)
			if len(after) != len(before) {
				t.Fatalf("target changed: %v, was %v", after, before)
			}
			for k, v := range before {
				if after[k] != v {
					t.Fatalf("%s changed: %q, was %q", k, after[k], v)
				}
			}
			if ents, _ := os.ReadDir(parent); len(ents) != 1 {
				t.Errorf("left beside the target: %v", ents)
			}
			// Staged flat, as a pull is: refused the same, nothing left.
			tr, err := tree.Open(dst)
			if err != nil {
				t.Fatal(err)
			}
			defer tr.Close()
			if _, _, err := Stage(context.Background(), tr, bytes.NewReader(c.data()), "nux", hostilePolicy, lim, nil, true); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("staged flat: error %v, want one saying %q", err, c.want)
			}
			if after := listTree(t, dst); len(after) != len(before) {
				t.Fatalf("staged flat: target changed: %v, was %v", after, before)
			}
		})
	}
}

// TestStageFlat: a pull's staging tree holds each file and symlink the
// archive carried under the name FlatNames gives it, with its content,
// mode and target, and none of the archive's directories.
func TestStageFlat(t *testing.T) {
	dst := t.TempDir()
	tr, err := tree.Open(dst)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	ms := []fixture.Member{fixture.Dir("results"), fixture.Dir("results/d"), fixture.File("results/d/a", "a"), fixture.Link("results/l", "d/a"), fixture.File("results/b", "bb")}
	staging, m, err := Stage(context.Background(), tr, bytes.NewReader(fixture.Archive(t, ms)), "nux", sync.Policy{Include: []string{"results"}}, sync.Limits{}, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	names := FlatNames(m)
	want := map[string]string{"results/d/a": "2", "results/l": "3", "results/b": "4"}
	if fmt.Sprint(names) != fmt.Sprint(want) {
		t.Fatalf("FlatNames = %v, want %v", names, want)
	}
	got := listTree(t, filepath.Join(dst, staging, "tree"))
	if len(got) != 3 || !strings.HasPrefix(got["2"], "a -rw-r--r-- ") || got["3"] != "->d/a" || !strings.HasPrefix(got["4"], "bb -rw-r--r-- ") {
		t.Fatalf("staged %v, want files 2 and 4 and link 3 only", got)
	}
}

// TestExtractManyFiles: an archive of a million empty files is refused at
// the entry limit (10,000 here, to keep the test quick; the default is
// 100,000), having written nothing to the target.
func TestExtractManyFiles(t *testing.T) {
	pr, pw := io.Pipe()
	go func() {
		zw, _ := zstd.NewWriter(pw)
		tw := tar.NewWriter(zw)
		err := tw.WriteHeader(&tar.Header{Name: "results", Typeflag: tar.TypeDir, Mode: 0o755})
		for i := 0; i < 1_000_000 && err == nil; i++ {
			err = tw.WriteHeader(&tar.Header{Name: fmt.Sprintf("results/f%07d", i), Typeflag: tar.TypeReg, Mode: 0o644})
		}
		_ = tw.Close()
		_ = zw.Close()
		pw.CloseWithError(errors.Join(err, io.EOF))
	}()
	dst := filepath.Join(t.TempDir(), "data")
	start := time.Now()
	_, err := Extract(context.Background(), pr, dst, sync.Policy{Include: []string{"results"}}, sync.Limits{MaxFiles: 1_000})
	pr.Close()
	var le *sync.LimitError
	if !errors.As(err, &le) || le.Setting != "sync.max_files" {
		t.Fatalf("error %v, want the entry limit", err)
	}
	if ents, _ := os.ReadDir(dst); len(ents) != 0 {
		t.Errorf("target holds %d entries after a refused archive", len(ents))
	}
	t.Logf("refused after %v: %v", time.Since(start).Round(time.Millisecond), err)
}

func FuzzExtract(f *testing.F) {
	t := &testing.T{}
	f.Add(fixture.Archive(t, []fixture.Member{fixture.Dir("results"), fixture.File("results/a", "hello")}))
	f.Add(fixture.Archive(t, []fixture.Member{fixture.Dir("results"), {Hdr: tar.Header{Name: "results/l", Typeflag: tar.TypeSymlink, Linkname: "a"}}}))
	f.Add([]byte("not an archive"))
	f.Fuzz(func(t *testing.T, data []byte) {
		// Plain tar bytes too: compress what is not already zstd.
		if !bytes.HasPrefix(data, []byte{0x28, 0xb5, 0x2f, 0xfd}) {
			var buf bytes.Buffer
			zw, _ := zstd.NewWriter(&buf)
			_, _ = zw.Write(data)
			_ = zw.Close()
			data = buf.Bytes()
		}
		parent := t.TempDir()
		dst := filepath.Join(parent, "data")
		m, err := Extract(context.Background(), bytes.NewReader(data), dst, sync.Policy{Include: []string{"results"}}, sync.Limits{MaxBytes: 1 << 20, MaxFiles: 100})
		if err != nil {
			if ents, _ := os.ReadDir(dst); len(ents) != 0 {
				t.Fatalf("refused archive (%v) left %d entries in the target", err, len(ents))
			}
			return
		}
		for _, e := range m.Entries {
			if !filepath.IsLocal(e.Path) {
				t.Fatalf("accepted a path outside the target: %q", e.Path)
			}
		}
	})
}

// TestExtractKindChanges: what the archive has as a directory replaces a
// file or a symlink (which is removed, not followed) in the target, and
// a file replaces a directory.
func TestExtractKindChanges(t *testing.T) {
	outside := t.TempDir()
	tests := []struct {
		name   string
		src    map[string]string // the archive's tree
		dst    map[string]string // the target before
		want   string            // a path the archive's tree has, read after
		absent string            // a path that must be gone
	}{
		{name: "a file becomes a directory", src: map[string]string{"results/x/y": "new"}, dst: map[string]string{"results/x": "old"}, want: "results/x/y"},
		{name: "a symlink becomes a directory", src: map[string]string{"results/x/y": "new"}, dst: map[string]string{"results/x": "->" + outside}, want: "results/x/y"},
		{name: "a directory becomes a file", src: map[string]string{"results/x": "new"}, dst: map[string]string{"results/x/y": "old"}, want: "results/x", absent: "results/x/y"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src, dst := t.TempDir(), t.TempDir()
			fixture.WriteTree(t, src, tt.src)
			fixture.WriteTree(t, dst, tt.dst)
			var buf bytes.Buffer
			if _, _, err := Pack(context.Background(), src, testPolicy, &buf); err != nil {
				t.Fatal(err)
			}
			if _, err := Extract(context.Background(), &buf, dst, testPolicy, sync.Limits{}); err != nil {
				t.Fatal(err)
			}
			if b, err := os.ReadFile(filepath.Join(dst, tt.want)); err != nil || string(b) != "new" {
				t.Errorf("%s: %q, %v", tt.want, b, err)
			}
			if tt.absent != "" {
				if _, err := os.Lstat(filepath.Join(dst, tt.absent)); err == nil {
					t.Errorf("%s is still there", tt.absent)
				}
			}
			if ents, _ := os.ReadDir(outside); len(ents) != 0 {
				t.Errorf("written through the symlink: %d entries outside", len(ents))
			}
		})
	}
}
