package archive

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"

	"github.com/polecat-sidecar/sidecar/sync"
)

// A base's contents are what a three-way merge needs of the tree both
// sides last shared: the files of at most MaxKept bytes, kept in one
// uncompressed tar file rather than a tree of copies, because creating
// thousands of small files is what a transfer of many small files spends
// its time on. Contents reads such a file; KeepContents (while packing)
// and WriteContents (from an extracted tree) write one.

// MaxKept is the largest file whose content a base keeps: the largest a
// three-way text merge is tried on (merge.Options.MaxTextMerge's default).
const MaxKept = 8 << 20

// Contents is a base's kept contents as an fs.FS (read-only, files only,
// no directories to list), over a tar file written by KeepContents or
// WriteContents. Safe for concurrent use.
type Contents struct {
	f *os.File
	*ContentsIndex
}

// ContentsIndex says where each file of a contents file is: what
// OpenContents learns by reading every member's headers, and what
// WriteContents knows as it writes them. OpenIndexed takes it instead of
// reading the headers again. It is not changed once made, so any number
// of Contents may share it.
type ContentsIndex struct {
	files map[string]contentsMember
	size  int64 // the contents file's length
}

// contentsMember is where a kept file is in the tar file: its content at
// off, and the whole member, headers and padding included, from start to
// end (what WriteContents copies as it is).
type contentsMember struct {
	start, off, size, end int64
	mode                  fs.FileMode
}

// OpenContents indexes the tar file at p (reading its headers only).
func OpenContents(p string) (*Contents, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, fmt.Errorf("opening kept contents: %w", err)
	}
	c := &Contents{f: f, ContentsIndex: &ContentsIndex{files: map[string]contentsMember{}}}
	// The reader tells each member's offset; tar.Reader skips a member's
	// data by seeking, within the reader's buffer when it can, so that a
	// tree of small files costs a read per buffer, not one per header.
	cr := &headerReader{f: f, buf: make([]byte, 64<<10)}
	tr := tar.NewReader(cr)
	var end int64 // the last member's end: where the next one's headers start
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			fi, err := f.Stat()
			if err != nil {
				f.Close()
				return nil, fmt.Errorf("reading kept contents %s: %w", p, err)
			}
			c.size = fi.Size()
			return c, nil
		}
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("reading kept contents %s: %w", p, err)
		}
		m := contentsMember{start: end, off: cr.n, size: hdr.Size, end: cr.n + (hdr.Size+511)/512*512, mode: fs.FileMode(hdr.Mode).Perm()}
		if hdr.Typeflag == tar.TypeReg && sync.ValidRel(hdr.Name) {
			c.files[hdr.Name] = m
		}
		end = m.end
	}
}

// OpenIndexed opens the contents file at p with its index ix, from
// WriteContents or an earlier Contents of the same file, without reading
// its headers. A file whose length is not the index's is refused: it is
// not the file the index describes.
func OpenIndexed(p string, ix *ContentsIndex) (*Contents, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, fmt.Errorf("opening kept contents: %w", err)
	}
	fi, err := f.Stat()
	if err == nil && fi.Size() != ix.size {
		err = fmt.Errorf("%d bytes where its index says %d", fi.Size(), ix.size)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("opening kept contents %s: %w", p, err)
	}
	return &Contents{f: f, ContentsIndex: ix}, nil
}

// Holds says whether c is what WriteContents would write for m from c:
// every file of m a base keeps is marked unchanged and kept in c at its
// size, and c keeps nothing else.
func (c *Contents) Holds(m *sync.Manifest) bool {
	n := 0
	for _, e := range m.Entries {
		if e.Type != sync.TypeFile || e.Size > MaxKept {
			continue
		}
		if _, ok := c.unchanged(e); !ok {
			return false
		}
		n++
	}
	return n == len(c.files)
}

// Index is c's index, for OpenIndexed.
func (c *Contents) Index() *ContentsIndex { return c.ContentsIndex }

// unchanged is where c keeps the file e, when e is a file the archive
// left out as unchanged and c holds it at its size: WriteContents copies
// such a member as it is, without reading it into memory or hashing it
// again (Kept checks the hash whenever a merge uses it).
func (c *Contents) unchanged(e sync.Entry) (contentsMember, bool) {
	if c == nil || !e.Unchanged {
		return contentsMember{}, false
	}
	m, ok := c.files[e.Path]
	return m, ok && m.size == e.Size
}

// Open opens a kept file by its slash-separated path in the data root.
func (c *Contents) Open(name string) (fs.File, error) {
	m, ok := c.files[name]
	if !ok || !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	return &contentsFile{SectionReader: io.NewSectionReader(c.f, m.off, m.size), name: name, m: m}, nil
}

// Close releases the file.
func (c *Contents) Close() error { return c.f.Close() }

// contentsFile is one kept file, read in place.
type contentsFile struct {
	*io.SectionReader
	name string
	m    contentsMember
}

func (f *contentsFile) Stat() (fs.FileInfo, error) {
	return memberInfo{name: path.Base(f.name), mode: f.m.mode, size: f.m.size}, nil
}
func (f *contentsFile) Close() error { return nil }

// headerReader reads a tar file for OpenContents through a buffer,
// seeking within the buffer, or in the file past it, and counting where
// it is: n is the offset of the next byte Read returns.
type headerReader struct {
	f    io.ReadSeeker
	buf  []byte
	r, w int // buf[r:w] is read from f and not yet returned
	n    int64
}

func (h *headerReader) Read(p []byte) (int, error) {
	if h.r == h.w {
		m, err := h.f.Read(h.buf)
		h.r, h.w = 0, m
		if m == 0 {
			return 0, err
		}
	}
	m := copy(p, h.buf[h.r:h.w])
	h.r += m
	h.n += int64(m)
	return m, nil
}

// Seek takes io.SeekCurrent and io.SeekStart (all tar.Reader uses).
func (h *headerReader) Seek(off int64, whence int) (int64, error) {
	switch whence {
	case io.SeekCurrent:
		off += h.n
	case io.SeekStart:
	default:
		return h.n, errors.New("kept contents: seeking from the end")
	}
	if d := off - h.n; d >= 0 && d <= int64(h.w-h.r) {
		h.r += int(d)
		h.n = off
		return off, nil
	}
	n, err := h.f.Seek(off, io.SeekStart)
	if err != nil {
		return h.n, err
	}
	h.r, h.w, h.n = 0, 0, n
	return n, nil
}

// KeepContents makes Pack also write the contents of every file of at most
// MaxKept bytes it sends to w, as a tar file Contents can read: exactly
// the bytes it hashed and sent, without reading them twice.
func KeepContents(w io.Writer) PackOption {
	return func(pk *packer) { pk.keep = tar.NewWriter(w) }
}

// keepMember starts a kept copy of a file being packed, returning what its
// bytes go to (io.Discard when it is not kept).
func (pk *packer) keepMember(e sync.Entry) (io.Writer, error) {
	if pk.keep == nil || e.Size > MaxKept {
		return io.Discard, nil
	}
	if err := pk.keep.WriteHeader(contentsHeader(e)); err != nil {
		return nil, fmt.Errorf("keeping %s: %w", e.Path, err)
	}
	return pk.keep, nil
}

// contentsHeader is a kept file's tar header.
func contentsHeader(e sync.Entry) *tar.Header {
	return &tar.Header{Typeflag: tar.TypeReg, Name: e.Path, Size: e.Size, Mode: int64(e.Mode), ModTime: e.MTime}
}

// ContentsSize is how many bytes WriteContents writes for m from prev
// (may be nil) at most: each kept file's headers, as tar writes them (an
// extended header for a long or non-ASCII name, or a time USTAR cannot
// hold, both of which the container chooses), and its padded content, and
// the trailer; a member copied from prev as it is counts its length
// there, without its headers being made again.
func ContentsSize(m *sync.Manifest, prev *Contents) int64 {
	var headers countingWriter
	tw := tar.NewWriter(&headers)
	n := int64(1024)
	for _, e := range m.Entries {
		if km, ok := prev.unchanged(e); ok && e.Size <= MaxKept {
			n += km.end - km.start
			continue
		}
		if e.Type == sync.TypeFile && e.Size <= MaxKept {
			h := contentsHeader(e)
			h.Size = 0 // the header alone; the content is counted below
			if err := tw.WriteHeader(h); err != nil {
				// WriteContents cannot write it either; count it
				// generously and go on with a writer of its own.
				tw, n = tar.NewWriter(&headers), n+3*512+int64(len(e.Path))
			}
			n += (e.Size + 511) / 512 * 512
		}
	}
	return n + headers.n
}

// countingWriter counts what is written to it.
type countingWriter struct{ n int64 }

func (c *countingWriter) Write(p []byte) (int, error) {
	c.n += int64(len(p))
	return len(p), nil
}

// WriteContents writes to w, as a tar file Contents reads, the contents of
// m's files of at most MaxKept bytes: from sent (the files an archive
// carried, by path: a staging tree) for those it carried, from prev (the
// old base's contents, or nil) for those marked unchanged, whose members
// are copied a run at a time when prev is a *Contents (docs/benchmarks.md).
// A file in neither, or no longer hashing as m says, is left out: a merge
// then keeps both versions. It returns its index, for OpenIndexed.
func WriteContents(w io.Writer, m *sync.Manifest, sent, prev fs.FS) (*ContentsIndex, error) {
	cw := &offsetWriter{w: w}
	tw := tar.NewWriter(cw)
	ix := &ContentsIndex{files: map[string]contentsMember{}}
	kept, _ := prev.(*Contents)
	var run contentsMember // members of kept to copy as they are, start to end
	var runFiles []string  // their names
	copyRun := func() error {
		if run.end == run.start {
			return nil
		}
		if err := tw.Flush(); err != nil {
			return fmt.Errorf("keeping the unchanged files: %w", err)
		}
		shift := cw.n - run.start
		if _, err := io.Copy(cw, io.NewSectionReader(kept.f, run.start, run.end-run.start)); err != nil {
			return fmt.Errorf("keeping the unchanged files: %w", err)
		}
		for _, name := range runFiles {
			km := kept.files[name]
			km.start, km.off, km.end = km.start+shift, km.off+shift, km.end+shift
			ix.files[name] = km
		}
		run, runFiles = contentsMember{}, runFiles[:0]
		return nil
	}
	for _, e := range m.Entries {
		if e.Type != sync.TypeFile || e.Size > MaxKept {
			continue
		}
		if km, ok := kept.unchanged(e); ok {
			if run.end != km.start || run.end == run.start {
				if err := copyRun(); err != nil {
					return nil, err
				}
				run.start = km.start
			}
			run.end = km.end
			runFiles = append(runFiles, e.Path)
			continue
		}
		if err := copyRun(); err != nil {
			return nil, err
		}
		b, err := readKept(e, sent, prev)
		if err != nil {
			return nil, err
		}
		if b == nil || sync.HashBytes(b) != e.SHA256 {
			continue
		}
		if err := tw.Flush(); err != nil { // the last member's padding: this one starts after it
			return nil, fmt.Errorf("keeping %s: %w", e.Path, err)
		}
		start := cw.n
		if err := tw.WriteHeader(contentsHeader(e)); err != nil {
			return nil, fmt.Errorf("keeping %s: %w", e.Path, err)
		}
		off := cw.n
		if _, err := tw.Write(b); err != nil {
			return nil, fmt.Errorf("keeping %s: %w", e.Path, err)
		}
		ix.files[e.Path] = contentsMember{start: start, off: off, size: e.Size, end: off + (e.Size+511)/512*512, mode: e.Mode.Perm()}
	}
	if err := copyRun(); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	ix.size = cw.n
	return ix, nil
}

// offsetWriter counts what it writes to w.
type offsetWriter struct {
	w io.Writer
	n int64
}

func (o *offsetWriter) Write(p []byte) (int, error) {
	n, err := o.w.Write(p)
	o.n += int64(n)
	return n, err
}

// readKept reads one file for WriteContents: nil when it is not there.
func readKept(e sync.Entry, sent, prev fs.FS) ([]byte, error) {
	if !e.Unchanged {
		b, err := fs.ReadFile(sent, e.Path)
		if err != nil {
			return nil, fmt.Errorf("keeping %s: %w", e.Path, err)
		}
		return b, nil
	}
	if prev == nil {
		return nil, nil
	}
	b, err := fs.ReadFile(prev, e.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return b, err
}

// Kept is the content base keeps of the file e, when it is there and
// still hashes as e says: what a three-way merge takes as the base's
// version of a file, and ok false when it must go without.
func Kept(base fs.FS, e *sync.Entry) (content []byte, ok bool) {
	if base == nil {
		return nil, false
	}
	b, err := fs.ReadFile(base, e.Path)
	if err != nil || sync.HashBytes(b) != e.SHA256 {
		return nil, false
	}
	return b, true
}
