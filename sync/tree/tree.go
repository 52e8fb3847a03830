// Package tree opens a data root for what the data channel does to it: one
// Tree, the only way the sync packages touch a data root on behalf of what
// a polecat sent. Every operation goes through os.Root and none follows a
// symlink, so nothing an archive or a merge does leads outside the root
// whatever the root holds. It also walks the paths a policy lets cross,
// keeps the staging directories transfers unpack into, and locks a root
// for one merge at a time. A DirCache reaches a run of files through
// their directory's own os.Root, checked once for the run (see its
// comment for what that leaves).
package tree

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/polecat-sidecar/sidecar/internal/atomicfile"
	"github.com/polecat-sidecar/sidecar/sync"
)

// Tree is a data root opened for the changes a transfer makes: the one
// place that touches a data root on behalf of what a polecat sent, used by
// archive.Extract and by merges alike. Every operation goes through
// os.Root, so the kernel refuses a path that leads outside the root
// whatever the tree holds; and none follows a symlink: a path any of whose parent
// directories is a symlink (or not a directory) is refused, naming it, and
// a symlink at the path itself is removed, replaced or read, never
// written through. A Tree is not safe for concurrent use: a transfer owns
// it (merges of one root also hold its lock).
type Tree struct {
	root *os.Root
	dir  string
	// dirs are the directories this Tree has seen to be real directories
	// (not symlinks), so a walk of many files checks each parent once.
	// Anything the Tree removes or renames is forgotten.
	dirs map[string]bool
}

// Open opens dir, creating it if it is missing.
func Open(dir string) (*Tree, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating the data root %s: %w", dir, err)
	}
	r, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("opening the data root %s: %w", dir, err)
	}
	return &Tree{root: r, dir: dir, dirs: map[string]bool{}}, nil
}

// OpenRead opens dir for reading: nil, and no error, when it does not
// exist.
func OpenRead(dir string) (*Tree, error) {
	r, err := os.OpenRoot(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("opening the data root %s: %w", dir, err)
	}
	return &Tree{root: r, dir: dir, dirs: map[string]bool{}}, nil
}

// Close releases the root.
func (t *Tree) Close() error { return t.root.Close() }

// Dir is the tree's directory on disk.
func (t *Tree) Dir() string { return t.dir }

// PlainPathError is a path refused because a directory on the way to it is
// a symlink or not a directory: nothing is written or read through one.
type PlainPathError struct {
	Path, Through, Is string
}

func (e *PlainPathError) Error() string {
	return fmt.Sprintf("refusing %s: %s is a %s, and nothing in a data root is reached through one", e.Path, e.Through, e.Is)
}

// Parents checks that every directory above rel is a real directory, or
// missing (it will be made, or the operation fails with not-exist). They
// are checked from the top down, so that each is looked at through
// directories already known to be real: os.Root would follow a symlink
// above it (inside the root) and see the directory it points to.
func (t *Tree) Parents(rel string) error {
	if rel == "." {
		return nil
	}
	if !sync.ValidRel(rel) {
		return fmt.Errorf("refusing %q: not a clean path inside the data root", rel)
	}
	// Start below the deepest directory already checked: those above it
	// were checked with it.
	from := 0
	for i := len(rel) - 1; i > 0; i-- {
		if rel[i] == '/' && t.dirs[rel[:i]] {
			from = i + 1
			break
		}
	}
	for i := from; i < len(rel); i++ {
		if rel[i] != '/' {
			continue
		}
		dir := rel[:i]
		fi, err := t.root.Lstat(dir)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return nil // nor is anything under it
		case err != nil:
			return fmt.Errorf("checking %s: %w", dir, err)
		case fi.Mode()&fs.ModeSymlink != 0:
			return &PlainPathError{Path: rel, Through: dir, Is: "symlink"}
		case !fi.IsDir():
			return &PlainPathError{Path: rel, Through: dir, Is: kindOf(fi)}
		}
		t.dirs[dir] = true
	}
	return nil
}

// forget drops what the Tree knows of rel and everything under it. A
// directory is known only with every directory above it, so a path the
// Tree does not know has nothing known under it either (a file's rename,
// the common case, costs nothing); removing or renaming a known
// directory forgets all, which the next operations look up again.
func (t *Tree) forget(rel string) {
	if t.dirs[rel] {
		clear(t.dirs)
	}
}

// Lstat describes rel itself (a symlink is not followed).
func (t *Tree) Lstat(rel string) (fs.FileInfo, error) {
	if err := t.Parents(rel); err != nil {
		return nil, err
	}
	return t.root.Lstat(rel)
}

// Entry is what the tree holds at rel, as a manifest entry (a file's
// content hashed), and what Lstat said of it; nil and nil for nothing.
func (t *Tree) Entry(rel string) (*sync.Entry, fs.FileInfo, error) {
	fi, err := t.Lstat(rel)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	e := &sync.Entry{Path: rel, Mode: fi.Mode().Perm(), MTime: fi.ModTime().Truncate(time.Second).UTC()}
	switch {
	case fi.IsDir():
		e.Type = sync.TypeDir
	case fi.Mode()&fs.ModeSymlink != 0:
		e.Type, e.Mode, e.MTime = sync.TypeSymlink, 0o777, time.Time{}
		e.Target, err = t.root.Readlink(rel)
	case fi.Mode().IsRegular():
		e.Type, e.Size = sync.TypeFile, fi.Size()
		var f *os.File
		if f, err = t.Open(rel); err == nil {
			e.SHA256, err = sync.Hash(f)
			f.Close()
		}
	default:
		e.Type = "other"
	}
	return e, fi, err
}

// Open opens the regular file at rel for reading; a symlink there is not
// followed (the file opened must be the one Lstat saw).
func (t *Tree) Open(rel string) (*os.File, error) {
	fi, err := t.Lstat(rel)
	if err != nil {
		return nil, err
	}
	return t.OpenAs(rel, fi)
}

// OpenAs opens the regular file at rel that a listing (a Walk)
// described as fi: the file opened must be that one.
func (t *Tree) OpenAs(rel string, fi fs.FileInfo) (*os.File, error) {
	if err := regular(rel, fi); err != nil {
		return nil, err
	}
	f, err := t.root.Open(rel)
	if err != nil {
		return nil, err
	}
	return same(rel, fi, f)
}

// regular refuses to open what a listing described as fi unless it is a
// regular file.
func regular(rel string, fi fs.FileInfo) error {
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("refusing to open %s: not a regular file", rel)
	}
	return nil
}

// same is f, opened at rel, when it is the file a listing described as
// fi; otherwise f is closed and refused.
func same(rel string, fi fs.FileInfo, f *os.File) (*os.File, error) {
	if st, err := f.Stat(); err != nil || !os.SameFile(fi, st) {
		f.Close()
		return nil, fmt.Errorf("refusing to open %s: it changed while being opened", rel)
	}
	return f, nil
}

// Readlink is a symlink's target.
func (t *Tree) Readlink(rel string) (string, error) {
	if err := t.Parents(rel); err != nil {
		return "", err
	}
	return t.root.Readlink(rel)
}

// ReadDir lists a directory's names, sorted.
func (t *Tree) ReadDir(rel string) ([]string, error) {
	infos, err := t.readDirInfo(rel)
	names := make([]string, len(infos))
	for i, fi := range infos {
		names[i] = fi.Name()
	}
	return names, err
}

// readDirInfo describes what a directory holds, sorted by name, each
// entry as Lstat would (a symlink not followed): the directory is opened
// once, through the root, and its entries are looked at relative to it
// (fstatat on its descriptor), so a walk costs one path resolution a
// directory, not one a file.
func (t *Tree) readDirInfo(rel string) ([]fs.FileInfo, error) {
	fi, err := t.lstatDir(rel, "listing")
	if err != nil {
		return nil, err
	}
	d, err := t.root.Open(rel)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	if st, err := d.Stat(); err != nil || !os.SameFile(fi, st) {
		return nil, fmt.Errorf("listing %s: it changed while being opened", rel)
	}
	infos, err := d.Readdir(-1)
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", rel, err)
	}
	if rel != "." {
		t.dirs[rel] = true
	}
	slices.SortFunc(infos, func(a, b fs.FileInfo) int { return strings.Compare(a.Name(), b.Name()) })
	return infos, nil
}

// lstatDir is Lstat of rel, which must be a directory (not a symlink to
// one) for what the caller is doing.
func (t *Tree) lstatDir(rel, doing string) (fs.FileInfo, error) {
	fi, err := t.Lstat(rel)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("%s %s: not a directory", doing, rel)
	}
	return fi, nil
}

// OpenDir opens the real directory at rel as a root of its own, for a run
// of operations on the names in it: each then costs one system call on
// the directory's descriptor instead of a walk from the top. rel must be
// a directory, not a symlink to one, and the one opened must be the one
// Lstat saw; the caller closes it.
func (t *Tree) OpenDir(rel string) (*os.Root, error) {
	fi, err := t.lstatDir(rel, "opening")
	if err != nil {
		return nil, err
	}
	d, err := t.root.OpenRoot(rel)
	if err != nil {
		return nil, fmt.Errorf("opening directory %s: %w", rel, err)
	}
	if st, err := d.Stat("."); err != nil || !os.SameFile(fi, st) {
		d.Close()
		return nil, fmt.Errorf("opening directory %s: it changed while being opened", rel)
	}
	if rel != "." {
		t.dirs[rel] = true
	}
	return d, nil
}

// MkdirAll makes rel and the directories above it, each a real directory:
// a symlink or file on the way is refused.
func (t *Tree) MkdirAll(rel string, mode fs.FileMode) error {
	if err := t.Parents(rel); err != nil {
		return err
	}
	for i := 0; i <= len(rel); i++ {
		if i < len(rel) && rel[i] != '/' {
			continue
		}
		dir := rel[:i]
		if t.dirs[dir] {
			continue
		}
		err := t.root.Mkdir(dir, mode.Perm()|0o700)
		if errors.Is(err, fs.ErrExist) {
			fi, lerr := t.root.Lstat(dir)
			if lerr != nil {
				return fmt.Errorf("checking %s: %w", dir, lerr)
			}
			if !fi.IsDir() || fi.Mode()&fs.ModeSymlink != 0 {
				return &PlainPathError{Path: rel, Through: dir, Is: kindOf(fi)}
			}
		} else if err != nil {
			return fmt.Errorf("creating directory %s: %w", dir, err)
		}
		t.dirs[dir] = true
	}
	return nil
}

// Remove removes rel: a file, a symlink (not its target) or an empty
// directory.
func (t *Tree) Remove(rel string) error {
	if err := t.Parents(rel); err != nil {
		return err
	}
	t.forget(rel)
	return t.root.Remove(rel)
}

// RemoveAll removes rel and everything under it; symlinks under it are
// removed, not followed.
func (t *Tree) RemoveAll(rel string) error {
	if err := t.Parents(rel); err != nil {
		return err
	}
	t.forget(rel)
	return t.root.RemoveAll(rel)
}

// Rename moves from to to, both inside the tree, replacing a file or
// symlink at to.
func (t *Tree) Rename(from, to string) error {
	if err := errors.Join(t.Parents(from), t.Parents(to)); err != nil {
		return err
	}
	t.forget(from)
	return t.root.Rename(from, to)
}

// Symlink makes a symlink at rel pointing to target.
func (t *Tree) Symlink(target, rel string) error {
	if err := t.Parents(rel); err != nil {
		return err
	}
	return t.root.Symlink(target, rel)
}

// Create makes a new file at rel (it must not exist) for writing.
func (t *Tree) Create(rel string, mode fs.FileMode) (*os.File, error) {
	if err := t.Parents(rel); err != nil {
		return nil, err
	}
	return t.root.OpenFile(rel, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode.Perm())
}

// WriteFile writes data to a new or existing file at rel with mode, as
// atomicfile.WriteIn does inside the root: a reader, or the next start
// after a crash, sees the old content or the new, never a mix.
func (t *Tree) WriteFile(rel string, data []byte, mode fs.FileMode) error {
	if err := t.Parents(rel); err != nil {
		return err
	}
	return atomicfile.WriteIn(t.root, rel, data, mode)
}

// SetMeta sets the mode and modification time of the file or directory at
// rel (a symlink there is left alone).
func (t *Tree) SetMeta(rel string, mode fs.FileMode, mtime time.Time) error {
	fi, err := t.Lstat(rel)
	if err != nil {
		return err
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return nil
	}
	if err := t.root.Chmod(rel, mode.Perm()); err != nil {
		return fmt.Errorf("setting the mode of %s: %w", rel, err)
	}
	if !mtime.IsZero() {
		if err := t.root.Chtimes(rel, mtime, mtime); err != nil {
			return fmt.Errorf("setting the time of %s: %w", rel, err)
		}
	}
	return nil
}

// kindOf names what a non-directory is, for a refusal.
func kindOf(fi fs.FileInfo) string {
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return "symlink"
	case fi.Mode().IsRegular():
		return "file"
	default:
		return "special file"
	}
}
