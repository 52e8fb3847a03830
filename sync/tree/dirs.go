package tree

import (
	"container/list"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/polecat-sidecar/sidecar/sync"
)

// maxOpenDirs bounds the directories a Tree holds open besides its root
// (and one a rename pins). Those it closed are opened again when needed,
// each from the deepest directory above it still open.
const maxOpenDirs = 64

// keptNear and keptEvery say which of the directories opened on the way
// to one are kept open (dirAt): the keptNear nearest it, it included, and
// every keptEvery-th level from the top, so that a walk back up a deep
// tree opens at most keptEvery again for every keptNear levels, and a deep
// directory does not take the places of what other operations keep
// (docs/security.md, the deep tree's row).
const (
	keptNear  = 16
	keptEvery = 32
)

// openDir is a real directory of a Tree held open: each element of its
// path was looked at (Lstat) in the directory above it, held open
// already, found to be a directory and not a symlink, and opened there
// as an os.Root, which had to be the directory Lstat saw. An operation
// on a name in it is one system call on its descriptor, wherever it is
// in the tree.
type openDir struct {
	rel  string
	root *os.Root
	// file is the directory as a file, opened the first time a rename
	// takes something out of it or into it from another directory
	// (renameat needs both descriptors).
	file *os.File
	elem *list.Element // its place among the open directories; nil for the Tree's root
	// pinned keeps it open while an operation that needs it opens
	// another (a rename's first directory).
	pinned bool
	// passing is a directory opened on the way to another and not kept.
	passing bool
}

// fd is the directory's descriptor, for renameat.
func (d *openDir) fd() (int, error) {
	if d.file == nil {
		f, err := d.root.Open(".")
		if err != nil {
			return 0, err
		}
		d.file = f
	}
	return int(d.file.Fd()), nil
}

// close releases the directory's descriptors.
func (d *openDir) close() {
	if d.file != nil {
		d.file.Close()
	}
	d.root.Close()
}

// dirCache is what a Tree holds open: its root, and the directories it
// reached last, the most recently used first.
type dirCache struct {
	top    *openDir
	open   map[string]*openDir
	recent list.List // of *openDir, the most recently used first
}

func newDirCache(root *os.Root) *dirCache {
	return &dirCache{top: &openDir{rel: ".", root: root}, open: map[string]*openDir{}}
}

// get is the directory rel, if it is open, marked as just used.
func (c *dirCache) get(rel string) *openDir {
	d := c.open[rel]
	if d != nil {
		c.recent.MoveToFront(d.elem)
	}
	return d
}

// put holds root open as the directory rel, closing the least recently
// used directories over maxOpenDirs (never a pinned one).
func (c *dirCache) put(rel string, root *os.Root) *openDir {
	d := &openDir{rel: rel, root: root}
	d.elem = c.recent.PushFront(d)
	c.open[rel] = d
	for e := c.recent.Back(); e != nil && len(c.open) > maxOpenDirs; {
		old := e.Value.(*openDir)
		e = e.Prev()
		if !old.pinned && old != d {
			c.drop(old)
		}
	}
	return d
}

// drop closes d and forgets it.
func (c *dirCache) drop(d *openDir) {
	c.recent.Remove(d.elem)
	delete(c.open, d.rel)
	d.close()
}

// forget closes what is held open at rel or under it: it was removed or
// renamed, and its path now leads elsewhere or nowhere.
func (c *dirCache) forget(rel string) {
	for p, d := range c.open {
		if p == rel || (strings.HasPrefix(p, rel) && p[len(rel)] == '/') {
			c.drop(d)
		}
	}
}

// close closes everything, the root included.
func (c *dirCache) close() error {
	for _, d := range c.open {
		d.close()
	}
	clear(c.open)
	c.recent.Init()
	if c.top.file != nil {
		c.top.file.Close()
	}
	return c.top.root.Close()
}

// dirAt is the real directory dir ("." for the root), held open: found
// open, or opened element by element from the deepest directory above it
// that is. A symlink or file on the way is refused (a PlainPathError
// naming path, what the caller is after); a missing directory is an
// error fs.ErrNotExist matches, or, when mkdir is not zero, made with
// its permissions (and the owner's).
func (t *Tree) dirAt(dir, path string, mkdir fs.FileMode) (*openDir, error) {
	if dir == "." {
		return t.dirs.top, nil
	}
	if d := t.dirs.get(dir); d != nil {
		return d, nil
	}
	d, next := t.dirs.top, 0 // next: where dir's elements below d start
	for i := strings.LastIndexByte(dir, '/'); i > 0; i = strings.LastIndexByte(dir[:i], '/') {
		if above := t.dirs.get(dir[:i]); above != nil {
			d, next = above, i+1
			break
		}
	}
	// Of the directories on the way, only some are kept (keptNear).
	level := strings.Count(dir[:next], "/")
	left := strings.Count(dir[next:], "/") + 1
	for ; next <= len(dir); left-- {
		level++
		end := strings.IndexByte(dir[next:], '/')
		if end < 0 {
			end = len(dir)
		} else {
			end += next
		}
		child, err := t.openChild(d, dir[:end], path, mkdir, left <= keptNear || level%keptEvery == 0)
		if d.passing {
			d.close()
		}
		if err != nil {
			return nil, err
		}
		d, next = child, end+1
	}
	return d, nil
}

// openChild opens rel, an element of parent, as a directory (dirAt):
// held open when keep is set, else passing, for the caller to close.
func (t *Tree) openChild(parent *openDir, rel, path string, mkdir fs.FileMode, keep bool) (*openDir, error) {
	name := rel[strings.LastIndexByte(rel, '/')+1:]
	fi, err := parent.root.Lstat(name)
	if errors.Is(err, fs.ErrNotExist) && mkdir != 0 {
		if err = parent.root.Mkdir(name, mkdir.Perm()|0o700); err == nil || errors.Is(err, fs.ErrExist) {
			fi, err = parent.root.Lstat(name)
		}
	}
	switch {
	case err != nil:
		return nil, inTree(err, rel)
	case fi.Mode()&fs.ModeSymlink != 0:
		return nil, &PlainPathError{Path: path, Through: rel, Is: "symlink"}
	case !fi.IsDir():
		return nil, &PlainPathError{Path: path, Through: rel, Is: kindOf(fi)}
	}
	r, err := openSeen(parent.root, name, fi)
	if err != nil {
		return nil, fmt.Errorf("opening directory %s: %w", rel, err)
	}
	if !keep {
		return &openDir{rel: rel, root: r, passing: true}, nil
	}
	return t.dirs.put(rel, r), nil
}

// openSeen opens name in parent as an os.Root: the directory an Lstat
// there described as fi, or an error if it is something else by now.
func openSeen(parent *os.Root, name string, fi fs.FileInfo) (*os.Root, error) {
	r, err := parent.OpenRoot(name)
	if err != nil {
		return nil, err
	}
	if st, err := r.Stat("."); err != nil || !os.SameFile(fi, st) {
		r.Close()
		return nil, errors.New("it changed while being opened")
	}
	return r, nil
}

// at is the directory rel is in, held open (dirAt), and rel's name in it.
func (t *Tree) at(rel string) (*openDir, string, error) {
	if rel == "." {
		return t.dirs.top, ".", nil
	}
	if !sync.ValidRel(rel) {
		return nil, "", fmt.Errorf("refusing %q: not a clean path inside the data root", rel)
	}
	i := strings.LastIndexByte(rel, '/')
	if i < 0 {
		return t.dirs.top, rel, nil
	}
	d, err := t.dirAt(rel[:i], rel, 0)
	return d, rel[i+1:], err
}

// rename moves name in from to name in to, as renameat does.
func rename(from *openDir, fromName string, to *openDir, toName string) error {
	if from == to {
		return from.root.Rename(fromName, toName)
	}
	ffd, err := from.fd()
	if err != nil {
		return err
	}
	tfd, err := to.fd()
	if err != nil {
		return err
	}
	return unix.Renameat(ffd, fromName, tfd, toName)
}

// inTree is err from an operation on a name in a directory held open,
// with the name's path in the tree in place of the name.
func inTree(err error, rel string) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return &fs.PathError{Op: pe.Op, Path: rel, Err: pe.Err}
	}
	return err
}
