package sync

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
)

// member is one tar member of a hand-made archive.
type member struct {
	hdr  tar.Header
	body string
}

func file(name, body string) member {
	return member{tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(body)), ModTime: time.Unix(1700000000, 0)}, body}
}

func dir(name string) member {
	return member{hdr: tar.Header{Name: name, Typeflag: tar.TypeDir, Mode: 0o755, ModTime: time.Unix(1700000000, 0)}}
}

// manifestOf is the manifest Pack would write for members.
func manifestOf(ms []member) member {
	m := Manifest{Version: manifestVersion}
	for _, x := range ms {
		e := Entry{Path: strings.TrimSuffix(x.hdr.Name, "/"), Mode: os.FileMode(x.hdr.Mode).Perm(), MTime: x.hdr.ModTime.UTC()}
		switch x.hdr.Typeflag {
		case tar.TypeDir:
			e.Type = TypeDir
		case tar.TypeSymlink:
			e.Type, e.Target, e.MTime, e.Mode = TypeSymlink, x.hdr.Linkname, time.Time{}, 0o777
		default:
			sum := sha256.Sum256([]byte(x.body))
			e.Type, e.Size, e.SHA256 = TypeFile, x.hdr.Size, hex.EncodeToString(sum[:])
		}
		m.Entries = append(m.Entries, e)
	}
	b, _ := json.Marshal(m)
	return file(ManifestName, string(b))
}

// archive packs members (and, with withManifest, their manifest) as
// tar+zstd, the way a hostile agent could.
func archive(t *testing.T, ms []member, withManifest bool) []byte {
	t.Helper()
	if withManifest {
		return archiveTB(t, ms)
	}
	return archiveRaw(t, ms)
}

// archiveWriter writes hand-made archives: tar members through zstd.
type archiveWriter struct {
	zw *zstd.Encoder
	tw *tar.Writer
}

func newArchiveWriter(w io.Writer) *archiveWriter {
	zw, _ := zstd.NewWriter(w)
	return &archiveWriter{zw: zw, tw: tar.NewWriter(zw)}
}

// add writes a member; a body shorter or longer than its header says is
// written as it is (hostile archives lie), so only the header can fail.
func (a *archiveWriter) add(m member) error {
	if err := a.tw.WriteHeader(&m.hdr); err != nil {
		return err
	}
	_, _ = a.tw.Write([]byte(m.body))
	return nil
}

// close ends the archive; the tar trailer of a lying archive may fail,
// and is left as it is.
func (a *archiveWriter) close() error {
	_ = a.tw.Close()
	return a.zw.Close()
}

func TestExtractHostile(t *testing.T) {
	hostilePolicy := Policy{Include: []string{"results"}}
	link := func(name, target string) member {
		return member{hdr: tar.Header{Name: name, Typeflag: tar.TypeSymlink, Linkname: target, Mode: 0o777, ModTime: time.Unix(1700000000, 0)}}
	}
	typed := func(name string, typ byte) member {
		return member{hdr: tar.Header{Name: name, Typeflag: typ, Mode: 0o644, Linkname: "results/a", ModTime: time.Unix(1700000000, 0)}}
	}
	setuid := file("results/su", "x")
	setuid.hdr.Mode = 0o4755
	big := member{hdr: tar.Header{Name: "results/sparse", Typeflag: tar.TypeReg, Mode: 0o644, Size: 10 << 30}}
	short := file("results/short", "0123456789")
	cases := []struct {
		name  string
		data  func() []byte
		want  string
		limit *Limits
	}{
		{"path traversal", func() []byte { return archive(t, []member{dir("results"), file("results/../../etc/x", "x")}, true) }, "not a clean path", nil},
		{"absolute name", func() []byte { return archive(t, []member{file("/etc/passwd", "x")}, true) }, "not a clean path", nil},
		{"dot-dot name", func() []byte { return archive(t, []member{file("..", "x")}, true) }, "not a clean path", nil},
		{"symlink out", func() []byte { return archive(t, []member{dir("results"), link("results/l", "../../../etc")}, true) }, "outside the data root", nil},
		{"symlink to a secret", func() []byte { return archive(t, []member{dir("results"), link("results/l", "../.ssh")}, true) }, "which is not a path that crosses", nil},
		{"write through a symlink", func() []byte {
			return archive(t, []member{dir("results"), dir("results/d"), link("results/l", "d"), file("results/l/x", "x")}, true)
		}, "through the symlink", nil},
		{"hard link", func() []byte { return archive(t, []member{dir("results"), typed("results/h", tar.TypeLink)}, true) }, "hard link", nil},
		{"device node", func() []byte { return archive(t, []member{dir("results"), typed("results/d", tar.TypeChar)}, true) }, "character device", nil},
		{"fifo", func() []byte { return archive(t, []member{dir("results"), typed("results/f", tar.TypeFifo)}, true) }, "fifo", nil},
		{"setuid file", func() []byte { return archive(t, []member{dir("results"), setuid}, true) }, "setuid", nil},
		{"10 GB sparse member", func() []byte { return archive(t, []member{dir("results"), big}, false) }, "file size limit of 536870912 (sync.max_file_size)", nil},
		{"decompression bomb", func() []byte {
			return archive(t, []member{dir("results"), file("results/zeros", string(make([]byte, 32<<20)))}, true)
		}, "compression ratio limit of 1000 (sync.max_ratio)", nil},
		{"total size", func() []byte {
			return archive(t, []member{dir("results"), file("results/a", strings.Repeat("a", 600)), file("results/b", strings.Repeat("b", 600))}, true)
		}, "total size limit of 1000 (sync.max_bytes)", &Limits{MaxBytes: 1000}},
		{"truncated stream", func() []byte {
			b := archive(t, []member{dir("results"), file("results/a", strings.Repeat("a", 100000))}, true)
			return b[:len(b)/2]
		}, "archive refused", nil},
		{"no manifest", func() []byte { return archive(t, []member{dir("results"), file("results/a", "a")}, false) }, "ends before its manifest", nil},
		{"member not in the manifest", func() []byte {
			ms := []member{dir("results"), file("results/a", "a")}
			man := manifestOf(ms[:1])
			return archive(t, append(ms, man), false)
		}, "2 members, the manifest lists 1", nil},
		{"content differs from the manifest", func() []byte {
			ms := []member{dir("results"), file("results/a", "a")}
			man := manifestOf([]member{dir("results"), file("results/a", "b")})
			return archive(t, append(ms, man), false)
		}, "differs from its manifest entry", nil},
		{"declared size larger than sent", func() []byte {
			b := archive(t, []member{dir("results"), short}, true)
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
			return archive(t, []member{dir("results"), file("results/a", "1"), file("results/a", "2")}, true)
		}, "appears twice", nil},
		{"blacklisted path sent anyway", func() []byte {
			return archive(t, []member{dir("results"), dir("results/.ssh"), file("results/.ssh/authorized_keys", "ssh-ed25519 AAA")}, true)
		}, "not a path the policy lets cross", nil},
		{"not whitelisted", func() []byte { return archive(t, []member{file("notes.txt", "x")}, true) }, "not a path the policy lets cross", nil},
		{"member before its directory", func() []byte { return archive(t, []member{file("results/a", "x")}, true) }, "comes before its directory", nil},
		{"members after the manifest", func() []byte {
			ms := []member{dir("results")}
			return archive(t, append(append(ms, manifestOf(ms)), file("results/late", "x")), false)
		}, "after the manifest", nil},
		{"not zstd", func() []byte { return []byte("PK\x03\x04 a zip file, say") }, "archive refused", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			parent := t.TempDir()
			dst := filepath.Join(parent, "data")
			writeTree(t, dst, map[string]string{"results/existing": "untouched", "other": "kept"})
			before := tree(t, dst)
			lim := Limits{}
			if c.limit != nil {
				lim = *c.limit
			}
			_, err := Extract(context.Background(), bytes.NewReader(c.data()), dst, hostilePolicy, lim)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one saying %q", err, c.want)
			}
			after := tree(t, dst)
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
		})
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
	_, err := Extract(context.Background(), pr, dst, Policy{Include: []string{"results"}}, Limits{MaxFiles: 1_000})
	pr.Close()
	var le *LimitError
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
	f.Add(archive(t, []member{dir("results"), file("results/a", "hello")}, true))
	f.Add(archive(t, []member{dir("results"), {hdr: tar.Header{Name: "results/l", Typeflag: tar.TypeSymlink, Linkname: "a"}}}, true))
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
		m, err := Extract(context.Background(), bytes.NewReader(data), dst, Policy{Include: []string{"results"}}, Limits{MaxBytes: 1 << 20, MaxFiles: 100})
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
