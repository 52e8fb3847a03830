package sync

import (
	"archive/tar"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/mholt/archives"
)

// Limits bound what one archive may make its receiver write. Each refusal
// names the limit and the setting that raises it.
type Limits struct {
	// MaxBytes bounds the files' total size (sync.max_bytes).
	MaxBytes int64
	// MaxFiles bounds the number of entries (sync.max_files).
	MaxFiles int
	// MaxFileSize bounds one file (sync.max_file_size).
	MaxFileSize int64
	// MaxRatio bounds decompressed bytes per compressed byte
	// (sync.max_ratio), against decompression bombs.
	MaxRatio int64
	// MaxManifest bounds the manifest's size in bytes
	// (sync.max_manifest_bytes); its entries are bounded by MaxFiles.
	MaxManifest int64
	// DecoderMemory bounds the zstd decoder's window and memory.
	DecoderMemory uint64
}

// DefaultLimits take 1 GiB of files, 100,000 entries, 512 MiB in one file,
// a compression ratio of 1000, a 32 MiB manifest (100,000 entries of a
// typical path take about 20 MiB) and 64 MiB of decoder memory.
func DefaultLimits() Limits {
	return Limits{MaxBytes: 1 << 30, MaxFiles: 100_000, MaxFileSize: 512 << 20, MaxRatio: 1000, MaxManifest: 32 << 20, DecoderMemory: 64 << 20}
}

// LimitError is an archive over one of the Limits.
type LimitError struct {
	// Limit names what was exceeded, Setting the setting that raises it.
	Limit, Setting string
	// Max is the limit's value.
	Max int64
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("archive refused: over the %s limit of %d (%s)", e.Limit, e.Max, e.Setting)
}

// Extract reads an archive made by Pack from r and installs it under dst,
// trusting nothing in it. Every name must be a clean local path that the
// policy allows; only files, directories and symlinks are taken (no
// devices, fifos, hard links, setuid or setgid bits), and a symlink only
// if, followed through every link in the tree the archive describes, it
// leads to a path that crosses; sizes and counts stay within lim;
// duplicates are refused; every member must match the manifest, which must
// come last. Everything is written to a staging directory inside dst
// first, through a Tree; only a complete, valid archive is moved into
// place, each file replacing its old version by a rename and nothing
// written through a symlink already in dst, so a broken, truncated or
// malicious archive changes nothing in dst. Paths in dst the archive does
// not name are left alone.
func Extract(ctx context.Context, r io.Reader, dst string, p Policy, lim Limits) (*Manifest, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	t, err := OpenTree(dst)
	if err != nil {
		return nil, err
	}
	defer t.Close()
	staging, m, err := t.stage(ctx, r, extractSender, p, lim, nil)
	if err != nil {
		return nil, err
	}
	defer t.RemoveAll(staging)
	if err := install(t, path.Join(staging, "tree"), m); err != nil {
		return nil, err
	}
	return m, nil
}

// extractSender names Extract's staging directories (the sender is hostd).
const extractSender = "hostd"

// Unpack extracts and verifies an archive into dir, which it creates if
// need be and which should be empty (Extract's first half: every check,
// nothing installed). On error dir may hold part of the archive; the
// caller removes it.
func Unpack(ctx context.Context, r io.Reader, dir string, p Policy, lim Limits) (*Manifest, error) {
	return UnpackSince(ctx, r, dir, p, lim, nil)
}

// ErrBaseMismatch is an archive leaving out files as unchanged against a
// base this side does not have: the sender should send everything.
var ErrBaseMismatch = errors.New("archive refused: it leaves out files as unchanged since a base this side does not have; send everything")

// UnpackSince is Unpack for an archive made by Pack with Since(base):
// the files it leaves out must be in base, as the manifest says, and are
// not written (the caller has them). The tree the manifest describes,
// unchanged files included, must be within lim as a whole.
func UnpackSince(ctx context.Context, r io.Reader, dir string, p Policy, lim Limits, base *Manifest) (*Manifest, error) {
	lim = lim.orDefaults()
	root, err := OpenTree(dir)
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
	x := &extractor{root: root, policy: p, lim: lim, seen: map[string]string{}}
	if err := (archives.Tar{}).Extract(ctx, out, x.take); err != nil {
		if x.refused != nil {
			return nil, x.refused // as the extractor said it, without the archives wrapping
		}
		return nil, refusal(err)
	}
	if x.manifest == nil {
		return nil, errors.New("archive refused: it ends before its manifest (truncated, or not made by Pack)")
	}
	if err := x.verify(index(base)); err != nil {
		return nil, err
	}
	return x.manifest, nil
}

// orDefaults fills lim's zero fields from DefaultLimits.
func (lim Limits) orDefaults() Limits {
	d := DefaultLimits()
	lim.MaxBytes = cmp.Or(lim.MaxBytes, d.MaxBytes)
	lim.MaxFiles = cmp.Or(lim.MaxFiles, d.MaxFiles)
	lim.MaxFileSize = cmp.Or(lim.MaxFileSize, d.MaxFileSize)
	lim.MaxRatio = cmp.Or(lim.MaxRatio, d.MaxRatio)
	lim.MaxManifest = cmp.Or(lim.MaxManifest, d.MaxManifest)
	lim.DecoderMemory = cmp.Or(lim.DecoderMemory, d.DecoderMemory)
	return lim
}

// refusal says an error from reading the archive refused it, keeping a
// LimitError's message as it is.
func refusal(err error) error {
	var le *LimitError
	if errors.As(err, &le) || strings.HasPrefix(err.Error(), "archive refused") {
		return err
	}
	return fmt.Errorf("archive refused: %w", err)
}

// extractor takes members one at a time.
type extractor struct {
	root     *Tree
	policy   Policy
	lim      Limits
	seen     map[string]string // path -> type, in archive order
	order    []Entry
	bytes    int64
	manifest *Manifest
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
	if len(name) > maxPathLen || strings.Count(name, "/") >= maxDepth {
		return fmt.Errorf("archive refused: a path of %d bytes and %d levels is longer than %d bytes or deeper than %d", len(name), strings.Count(name, "/")+1, maxPathLen, maxDepth)
	}
	if !filepath.IsLocal(name) || !validRel(name) {
		return fmt.Errorf("archive refused: %q is not a clean path inside the data root", hdr.Name)
	}
	if _, dup := x.seen[name]; dup {
		return fmt.Errorf("archive refused: %q appears twice", name)
	}
	if len(x.seen) >= x.lim.MaxFiles {
		return &LimitError{Limit: "entry count", Setting: "sync.max_files", Max: int64(x.lim.MaxFiles)}
	}
	if name == ManifestName {
		return x.readManifest(hdr, f)
	}
	if !x.policy.Allowed(name) && !(hdr.Typeflag == tar.TypeDir && x.policy.Leads(name)) {
		return fmt.Errorf("archive refused: %q is not a path the policy lets cross", name)
	}
	if hdr.Mode&^int64(fs.ModePerm) != 0 {
		return fmt.Errorf("archive refused: %q has mode %o (setuid, setgid and sticky bits are refused)", name, hdr.Mode)
	}
	e := Entry{Path: name, Mode: fs.FileMode(hdr.Mode).Perm(), MTime: hdr.ModTime.Truncate(time.Second).UTC()}
	switch hdr.Typeflag {
	case tar.TypeDir:
		e.Type = TypeDir
		if err := x.root.MkdirAll(name, 0o700); err != nil {
			return fmt.Errorf("creating directory %s: %w", name, err)
		}
	case tar.TypeSymlink:
		// Judged here by its text, and again in verify through every link
		// of the tree the manifest describes.
		if !symlinkInside(name, hdr.Linkname) {
			return fmt.Errorf("archive refused: symlink %q points to %q, outside the data root", name, hdr.Linkname)
		}
		e.Type, e.Target, e.MTime, e.Mode = TypeSymlink, hdr.Linkname, time.Time{}, 0o777
		if err := x.parent(name); err != nil {
			return err
		}
		if err := x.root.Symlink(hdr.Linkname, name); err != nil {
			return fmt.Errorf("creating symlink %s: %w", name, err)
		}
	case tar.TypeReg:
		if err := x.file(hdr, f, &e); err != nil {
			return err
		}
	default:
		return fmt.Errorf("archive refused: %q is a %s; only files, directories and symlinks cross", name, typeName(hdr.Typeflag))
	}
	x.seen[name] = e.Type
	x.order = append(x.order, e)
	return nil
}

// file writes one regular file, no longer than declared and within the
// limits, and hashes it.
func (x *extractor) file(hdr *tar.Header, f archives.FileInfo, e *Entry) error {
	if hdr.Size > x.lim.MaxFileSize {
		return &LimitError{Limit: "file size", Setting: "sync.max_file_size", Max: x.lim.MaxFileSize}
	}
	if x.bytes += hdr.Size; x.bytes > x.lim.MaxBytes {
		return &LimitError{Limit: "total size", Setting: "sync.max_bytes", Max: x.lim.MaxBytes}
	}
	if err := x.parent(e.Path); err != nil {
		return err
	}
	out, err := x.root.Create(e.Path, 0o600)
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
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("archive refused: %s is cut short after %d of %d bytes", e.Path, n, hdr.Size)
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", e.Path, err)
	}
	if n != hdr.Size {
		return fmt.Errorf("archive refused: %s declared %d bytes, %d arrived", e.Path, hdr.Size, n)
	}
	e.Type, e.Size, e.SHA256 = TypeFile, n, hex.EncodeToString(h.Sum(nil))
	return nil
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
	case TypeDir:
		return nil
	case "":
		return fmt.Errorf("archive refused: %q comes before its directory %q", name, dir)
	default:
		return fmt.Errorf("archive refused: %q is written through the %s %q", name, x.seen[dir], dir)
	}
}

// readManifest takes the manifest member: its size is checked before it
// is read, and it is decoded one entry at a time, no more than the entry
// limit, so a hostile manifest costs no more memory than a real one of
// that many entries.
func (x *extractor) readManifest(hdr *tar.Header, f archives.FileInfo) error {
	if hdr.Typeflag != tar.TypeReg {
		return errors.New("archive refused: the manifest is not a file")
	}
	if hdr.Size > x.lim.MaxManifest {
		return &LimitError{Limit: "manifest size", Setting: "sync.max_manifest_bytes", Max: x.lim.MaxManifest}
	}
	src, err := f.Open()
	if err != nil {
		return err
	}
	defer src.Close()
	m, err := readManifest(io.LimitReader(src, hdr.Size), x.lim.MaxFiles)
	if err != nil {
		var le *LimitError
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
func (x *extractor) verify(base map[string]*Entry) error {
	got := x.order
	var want []Entry
	var total int64
	for _, e := range x.manifest.Entries {
		if total += e.Size; total > x.lim.MaxBytes {
			// Files left out as unchanged count too: the tree the receiver
			// keeps is the whole manifest, not what this archive carried.
			return &LimitError{Limit: "total size", Setting: "sync.max_bytes", Max: x.lim.MaxBytes}
		}
		if !e.Unchanged {
			want = append(want, e)
			continue
		}
		if b := base[e.Path]; b == nil || b.Type != TypeFile || b.SHA256 != e.SHA256 || b.Size != e.Size {
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
	view := manifestView(index(x.manifest))
	for _, e := range got {
		if e.Type == TypeSymlink {
			if err := x.policy.judgeLink(view, e.Path, e.Target); err != nil {
				return fmt.Errorf("archive refused: %w", err)
			}
		}
	}
	// Modes and times last, deepest first, so that writing a file does not
	// move its directory's time, and a read-only directory is filled first.
	for i := len(got) - 1; i >= 0; i-- {
		e := got[i]
		if e.Type == TypeSymlink {
			continue
		}
		// The owner keeps the right to read, write and enter what is
		// staged, whatever mode it came with, so it can be moved out,
		// kept as the base and removed: a read-only directory would stop
		// a merge half-way and stay behind.
		mode := e.Mode | 0o600
		if e.Type == TypeDir {
			mode |= 0o700
		}
		if err := x.root.SetMeta(e.Path, mode, e.MTime); err != nil {
			return err
		}
	}
	return nil
}

// install moves a verified staging tree (staging, in t) into place:
// directories made where missing, files and symlinks renamed over what
// was there, a file or symlink replaced by a directory or the reverse.
// Nothing is installed through a symlink in t (the Tree refuses it); the
// whole archive is checked for that before anything moves.
func install(t *Tree, staging string, m *Manifest) error {
	for _, e := range m.Entries {
		if err := t.parents(e.Path); err != nil {
			return err
		}
	}
	for _, e := range m.Entries {
		fi, err := t.Lstat(e.Path)
		isDir := err == nil && fi.IsDir()
		if e.Type == TypeDir {
			if isDir {
				continue
			}
			if err == nil {
				if err := t.Remove(e.Path); err != nil { // a file or symlink where a directory now goes
					return fmt.Errorf("installing %s: %w", e.Path, err)
				}
			}
			if err := t.MkdirAll(e.Path, 0o700); err != nil {
				return fmt.Errorf("installing %s: %w", e.Path, err)
			}
			continue
		}
		if isDir {
			if err := t.RemoveAll(e.Path); err != nil {
				return fmt.Errorf("installing %s over a directory: %w", e.Path, err)
			}
		}
		if err := t.Rename(path.Join(staging, e.Path), e.Path); err != nil {
			return fmt.Errorf("installing %s: %w", e.Path, err)
		}
	}
	for i := len(m.Entries) - 1; i >= 0; i-- {
		if e := m.Entries[i]; e.Type == TypeDir {
			_ = t.SetMeta(e.Path, e.Mode, e.MTime)
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
		return n, &LimitError{Limit: "compression ratio", Setting: "sync.max_ratio", Max: r.max}
	}
	return n, err
}
