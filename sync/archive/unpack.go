package archive

import (
	"archive/tar"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/mholt/archives"

	"github.com/polecat-sidecar/sidecar/sync"
	"github.com/polecat-sidecar/sidecar/sync/tree"
)

// Unpack extracts and verifies an archive into dir, which it creates if
// need be and which should be empty (Extract's first half: every check,
// nothing installed). On error dir may hold part of the archive; the
// caller removes it.
func Unpack(ctx context.Context, r io.Reader, dir string, p sync.Policy, lim sync.Limits) (*sync.Manifest, error) {
	return UnpackSince(ctx, r, dir, p, lim, nil)
}

// ErrBaseMismatch is an archive leaving out files as unchanged against a
// base this side does not have: the sender should send everything.
var ErrBaseMismatch = errors.New("archive refused: it leaves out files as unchanged since a base this side does not have; send everything")

// UnpackSince is Unpack for an archive made by Pack with Since(base):
// the files it leaves out must be in base, as the manifest says, and are
// not written (the caller has them). The tree the manifest describes,
// unchanged files included, must be within lim as a whole.
func UnpackSince(ctx context.Context, r io.Reader, dir string, p sync.Policy, lim sync.Limits, base *sync.Manifest) (*sync.Manifest, error) {
	return unpack(ctx, r, dir, p, lim, base, false)
}

// unpack is UnpackSince, writing each file and symlink flat in dir under
// the name FlatNames gives it, and no directory, when flat is set.
func unpack(ctx context.Context, r io.Reader, dir string, p sync.Policy, lim sync.Limits, base *sync.Manifest, flat bool) (*sync.Manifest, error) {
	lim = lim.WithDefaults()
	root, err := tree.Open(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	in := &countingReader{r: r}
	zr, err := zstd.NewReader(in, zstd.WithDecoderMaxMemory(lim.DecoderMemory), zstd.WithDecoderMaxWindow(lim.DecoderMemory), zstd.WithDecoderConcurrency(1))
	if err != nil {
		return nil, fmt.Errorf("archive refused: %w", err)
	}
	defer zr.Close()
	out := &ratioReader{r: zr, in: in, max: lim.MaxRatio}
	x := &extractor{root: root, flat: flat, policy: p, lim: lim, seen: map[string]string{}, in: []string{"."}}
	if err := (archives.Tar{}).Extract(ctx, out, x.take); err != nil {
		if x.refused != nil {
			return nil, x.refused // as the extractor said it, without the archives wrapping
		}
		return nil, refusal(err)
	}
	if x.manifest == nil {
		return nil, errors.New("archive refused: it ends before its manifest (truncated, or not made by Pack)")
	}
	if err := x.verify(base.Index()); err != nil {
		return nil, err
	}
	return x.manifest, nil
}

// refusal says an error from reading the archive refused it, keeping a
// LimitError's message as it is.
func refusal(err error) error {
	var le *sync.LimitError
	if errors.As(err, &le) || strings.HasPrefix(err.Error(), "archive refused") {
		return err
	}
	return fmt.Errorf("archive refused: %w", err)
}

// extractor takes members one at a time.
type extractor struct {
	root     *tree.Tree
	flat     bool // files and symlinks written flat (staged), no directories
	policy   sync.Policy
	lim      sync.Limits
	seen     map[string]string // path -> type, in archive order
	in       []string          // the directories the last member is in, from the top
	order    []sync.Entry
	bytes    int64
	manifest *sync.Manifest
	refused  error // why take refused a member
}

// take is member, remembering a refusal as it was said.
func (x *extractor) take(ctx context.Context, f archives.FileInfo) error {
	err := x.member(ctx, f)
	if err != nil {
		x.refused = err
	}
	return err
}

// member checks and writes one member.
func (x *extractor) member(ctx context.Context, f archives.FileInfo) error {
	hdr, ok := f.Header.(*tar.Header)
	if !ok {
		return errors.New("not a tar member")
	}
	if x.manifest != nil {
		return errors.New("archive refused: members after the manifest")
	}
	name := strings.TrimSuffix(hdr.Name, "/")
	if len(name) > sync.MaxPathLen || strings.Count(name, "/") >= sync.MaxDepth {
		return fmt.Errorf("archive refused: a path of %d bytes and %d levels is longer than %d bytes or deeper than %d", len(name), strings.Count(name, "/")+1, sync.MaxPathLen, sync.MaxDepth)
	}
	if !filepath.IsLocal(name) || !sync.ValidRel(name) {
		return fmt.Errorf("archive refused: %q is not a clean path inside the data root", hdr.Name)
	}
	if _, dup := x.seen[name]; dup {
		return fmt.Errorf("archive refused: %q appears twice", name)
	}
	if len(x.seen) >= x.lim.MaxFiles {
		return &sync.LimitError{Limit: "entry count", Setting: "sync.max_files", Max: int64(x.lim.MaxFiles)}
	}
	if name == sync.ManifestName {
		return x.readManifest(hdr, f)
	}
	if !x.policy.Allowed(name) && !(hdr.Typeflag == tar.TypeDir && x.policy.Leads(name)) {
		return fmt.Errorf("archive refused: %q is not a path the policy lets cross", name)
	}
	if hdr.Mode&^int64(fs.ModePerm) != 0 {
		return fmt.Errorf("archive refused: %q has mode %o (setuid, setgid and sticky bits are refused)", name, hdr.Mode)
	}
	e := sync.Entry{Path: name, Mode: fs.FileMode(hdr.Mode).Perm(), MTime: hdr.ModTime.Truncate(time.Second).UTC()}
	switch hdr.Typeflag {
	case tar.TypeDir:
		e.Type = sync.TypeDir
		if x.flat {
			break
		}
		if err := x.root.MkdirAll(name, 0o700); err != nil {
			return fmt.Errorf("creating directory %s: %w", name, err)
		}
	case tar.TypeSymlink:
		// Judged here by its text, and again in verify through every link
		// of the tree the manifest describes.
		if !sync.SymlinkInside(name, hdr.Linkname) {
			return fmt.Errorf("archive refused: symlink %q points to %q, outside the data root", name, hdr.Linkname)
		}
		e.Type, e.Target, e.MTime, e.Mode = sync.TypeSymlink, hdr.Linkname, time.Time{}, 0o777
		if err := x.parent(name); err != nil {
			return err
		}
		if err := x.root.Symlink(hdr.Linkname, x.staged(name)); err != nil {
			return fmt.Errorf("creating symlink %s: %w", name, err)
		}
	case tar.TypeReg:
		if err := x.file(hdr, f, &e); err != nil {
			return err
		}
	default:
		return fmt.Errorf("archive refused: %q is a %s; only files, directories and symlinks cross", name, typeName(hdr.Typeflag))
	}
	if err := x.walkOrder(name, e.Type == sync.TypeDir); err != nil {
		return err
	}
	x.seen[name] = e.Type
	x.order = append(x.order, e)
	return nil
}

// file writes one regular file, no longer than declared and within the
// limits, and hashes it.
func (x *extractor) file(hdr *tar.Header, f archives.FileInfo, e *sync.Entry) error {
	if hdr.Size > x.lim.MaxFileSize {
		return &sync.LimitError{Limit: "file size", Setting: "sync.max_file_size", Max: x.lim.MaxFileSize}
	}
	if x.bytes += hdr.Size; x.bytes > x.lim.MaxBytes {
		return &sync.LimitError{Limit: "total size", Setting: "sync.max_bytes", Max: x.lim.MaxBytes}
	}
	if err := x.parent(e.Path); err != nil {
		return err
	}
	out, err := x.root.Create(x.staged(e.Path), 0o600)
	if err != nil {
		return fmt.Errorf("creating %s: %w", e.Path, err)
	}
	src, err := f.Open()
	if err != nil {
		out.Close()
		return err
	}
	defer src.Close()
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(out, h), src)
	if errors.Is(err, io.ErrUnexpectedEOF) {
		out.Close()
		return fmt.Errorf("archive refused: %s is cut short after %d of %d bytes", e.Path, n, hdr.Size)
	}
	if err == nil && n != hdr.Size {
		out.Close()
		return fmt.Errorf("archive refused: %s declared %d bytes, %d arrived", e.Path, hdr.Size, n)
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	// Its mode and time now, on the file just written (verify sets the
	// directories'), should the manifest agree: the owner keeps the right
	// to read and write what is staged, as verify explains.
	if err == nil {
		err = x.root.SetMeta(x.staged(e.Path), e.Mode|0o600, e.MTime)
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", e.Path, err)
	}
	e.Type, e.Size, e.SHA256 = sync.TypeFile, n, hex.EncodeToString(h.Sum(nil))
	return nil
}

// staged is where the member name, the next in order, is written.
func (x *extractor) staged(name string) string {
	if x.flat {
		return strconv.Itoa(len(x.order))
	}
	return name
}

// parent makes sure name's directory exists and was made by this
// archive as a directory: a member's directory must come before it, so
// nothing is written under a symlink or file the archive made.
func (x *extractor) parent(name string) error {
	dir := path.Dir(name)
	if dir == "." {
		return nil
	}
	switch x.seen[dir] {
	case sync.TypeDir:
		return nil
	case "":
		return fmt.Errorf("archive refused: %q comes before its directory %q", name, dir)
	default:
		return fmt.Errorf("archive refused: %q is written through the %s %q", name, x.seen[dir], dir)
	}
}

// walkOrder refuses a member that is not in the directory the last one
// is in, or one above it, as a walk lists a tree (Pack's does): a
// directory, then everything under it, before anything else. So the Tree,
// which keeps few directories open, goes down each directory's path once,
// not once a member, here and in the merge, which takes paths in a walk's
// order too (docs/security.md, the row of "a tree thousands of levels deep").
func (x *extractor) walkOrder(name string, isDir bool) error {
	dir := path.Dir(name)
	for len(x.in) > 0 && x.in[len(x.in)-1] != dir {
		x.in = x.in[:len(x.in)-1]
	}
	if len(x.in) == 0 {
		return fmt.Errorf("archive refused: %q comes after the archive left %q (members come as a walk lists them: a directory, then everything under it)", name, dir)
	}
	if isDir {
		x.in = append(x.in, name)
	}
	return nil
}

// readManifest takes the manifest member: its size is checked before it
// is read, and it is decoded within the entry limit (sync.ReadManifest).
func (x *extractor) readManifest(hdr *tar.Header, f archives.FileInfo) error {
	if hdr.Typeflag != tar.TypeReg {
		return errors.New("archive refused: the manifest is not a file")
	}
	if hdr.Size > x.lim.MaxManifest {
		return &sync.LimitError{Limit: "manifest size", Setting: "sync.max_manifest_bytes", Max: x.lim.MaxManifest}
	}
	src, err := f.Open()
	if err != nil {
		return err
	}
	defer src.Close()
	m, err := sync.ReadManifest(src, hdr.Size, x.lim.MaxFiles)
	if err != nil {
		var le *sync.LimitError
		if errors.As(err, &le) {
			return err
		}
		return fmt.Errorf("archive refused: %w", err)
	}
	x.manifest = m
	return nil
}

// verify compares what arrived with the manifest, member by member, and
// sets the modes and times it gives.
func (x *extractor) verify(base map[string]*sync.Entry) error {
	got := x.order
	var want []sync.Entry
	var total int64
	for _, e := range x.manifest.Entries {
		if total += e.Size; total > x.lim.MaxBytes {
			// Files left out as unchanged count too: the tree the receiver
			// keeps is the whole manifest, not what this archive carried.
			return &sync.LimitError{Limit: "total size", Setting: "sync.max_bytes", Max: x.lim.MaxBytes}
		}
		if !e.Unchanged {
			want = append(want, e)
			continue
		}
		if b := base[e.Path]; b == nil || b.Type != sync.TypeFile || b.SHA256 != e.SHA256 || b.Size != e.Size {
			return ErrBaseMismatch
		}
		if !x.policy.Allowed(e.Path) {
			return fmt.Errorf("archive refused: %q is not a path the policy lets cross", e.Path)
		}
	}
	if len(got) != len(want) {
		return fmt.Errorf("archive refused: %d members, the manifest lists %d to send", len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			return fmt.Errorf("archive refused: member %q differs from its manifest entry", got[i].Path)
		}
	}
	view := sync.ManifestView(x.manifest.Index())
	for _, e := range got {
		if e.Type == sync.TypeSymlink {
			if err := x.policy.JudgeLink(view, e.Path, e.Target); err != nil {
				return fmt.Errorf("archive refused: %w", err)
			}
		}
	}
	// Directories' modes and times last, deepest first, so that writing a
	// file does not move its directory's time, and a read-only directory
	// is filled first (files got theirs as they were written). The owner
	// keeps the right to read, write and enter what is staged, whatever
	// mode it came with, so it can be moved out, kept as the base and
	// removed: a read-only directory would stop a merge half-way and stay
	// behind.
	for i := len(got) - 1; i >= 0; i-- {
		if e := got[i]; e.Type == sync.TypeDir && !x.flat {
			if err := x.root.SetMeta(e.Path, e.Mode|0o700, e.MTime); err != nil {
				return err
			}
		}
	}
	return nil
}

// typeName names a tar type flag for a refusal.
func typeName(t byte) string {
	switch t {
	case tar.TypeLink:
		return "hard link"
	case tar.TypeChar:
		return "character device"
	case tar.TypeBlock:
		return "block device"
	case tar.TypeFifo:
		return "fifo"
	default:
		return fmt.Sprintf("tar member of type %q", t)
	}
}

// countingReader counts the compressed bytes read.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// ratioReader refuses a stream that decompresses to more than max times
// what was read of it (past a first megabyte, which any archive may
// reach).
type ratioReader struct {
	r   io.Reader
	in  *countingReader
	max int64
	n   int64
}

func (r *ratioReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	r.n += int64(n)
	if r.n > 1<<20 && r.n > r.max*r.in.n {
		return n, &sync.LimitError{Limit: "compression ratio", Setting: "sync.max_ratio", Max: r.max}
	}
	return n, err
}
