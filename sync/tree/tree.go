// Package tree opens a data root for what the data channel does to it: one
// Tree, the only way the sync packages touch a data root on behalf of what
// a polecat sent. Every operation goes through os.Root and none follows a
// symlink, so nothing an archive or a merge does leads outside the root
// whatever the root holds. It also walks the paths a policy lets cross,
// keeps the staging directories transfers unpack into, and locks a root
// for one merge at a time.
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
// whatever the tree holds; and none follows a symlink: a path any of whose
// parent directories is a symlink (or not a directory) is refused, naming
// it, and a symlink at the path itself is removed, replaced or read, never
// written through. A Tree is not safe for concurrent use: a transfer owns
// it (merges of one root also hold its lock).
//
// An operation on a path is one on its name in its directory, which the
// Tree holds open as an os.Root of its own (dirs.go): each directory is
// looked at and opened once, element by element from the root, and then
// kept for the operations on the paths under it, so that what a transfer
// costs grows with its entries, not with their depth (os.Root resolves a
// path one element at a time: a file 256 levels down cost 256 opens an
// operation). The Tree keeps at most maxOpenDirs of them, the least
// recently used closed first, and forgets any it removes or renames. A
// directory held open is the one found there when it was opened: if
// something other than the Tree moves it meanwhile, out of the root even,
// the Tree's operations under its old path still reach it where it went.
// Nothing a polecat sends moves a directory on hostd (a merge renames
// only within the root, through the Tree); only the operator, or another
// program on the host, could.
type Tree struct {
	root *os.Root
	dir  string
	dirs *dirCache
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
	return &Tree{root: r, dir: dir, dirs: newDirCache(r)}, nil
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
	return &Tree{root: r, dir: dir, dirs: newDirCache(r)}, nil
}

// Close releases the root and the directories held open in it.
func (t *Tree) Close() error { return t.dirs.close() }

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
// missing (it will be made, or the operation fails with not-exist), each
// looked at in the directory above it, from the top down: os.Root would
// follow a symlink above it (inside the root) and see the directory it
// points to.
func (t *Tree) Parents(rel string) error {
	_, _, err := t.at(rel)
	if errors.Is(err, fs.ErrNotExist) {
		return nil // nor is anything under it
	}
	return err
}

// Lstat describes rel itself (a symlink is not followed).
func (t *Tree) Lstat(rel string) (fs.FileInfo, error) {
	d, name, err := t.at(rel)
	if err != nil {
		return nil, err
	}
	fi, err := d.root.Lstat(name)
	return fi, inTree(err, rel)
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
		e.Target, err = t.Readlink(rel)
	case fi.Mode().IsRegular():
		e.Type, e.Size = sync.TypeFile, fi.Size()
		var f *os.File
		if f, err = t.OpenAs(rel, fi); err == nil {
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
	d, name, err := t.at(rel)
	if err != nil {
		return nil, err
	}
	f, err := d.root.Open(name)
	if err != nil {
		return nil, inTree(err, rel)
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
	d, name, err := t.at(rel)
	if err != nil {
		return "", err
	}
	target, err := d.root.Readlink(name)
	return target, inTree(err, rel)
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
// entry as Lstat would (a symlink not followed): the directory is listed
// through its descriptor, held open (dirAt), and its entries are looked
// at relative to it (fstatat on its descriptor), so a walk costs one
// open a directory, not a walk of its path a file.
func (t *Tree) readDirInfo(rel string) ([]fs.FileInfo, error) {
	if rel != "." && !sync.ValidRel(rel) {
		return nil, fmt.Errorf("refusing %q: not a clean path inside the data root", rel)
	}
	d, err := t.dirAt(rel, rel, 0)
	var pe *PlainPathError
	if errors.As(err, &pe) && pe.Through == rel {
		return nil, fmt.Errorf("listing %s: not a directory", rel)
	}
	if err != nil {
		return nil, err
	}
	f, err := d.root.Open(".")
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", rel, err)
	}
	defer f.Close()
	infos, err := f.Readdir(-1)
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", rel, err)
	}
	slices.SortFunc(infos, func(a, b fs.FileInfo) int { return strings.Compare(a.Name(), b.Name()) })
	return infos, nil
}

// MkdirAll makes rel and the directories above it, each a real directory:
// a symlink or file on the way is refused.
func (t *Tree) MkdirAll(rel string, mode fs.FileMode) error {
	if !sync.ValidRel(rel) {
		return fmt.Errorf("refusing %q: not a clean path inside the data root", rel)
	}
	_, err := t.dirAt(rel, rel, mode|fs.ModeDir) // never zero: what is missing is made
	return err
}

// Remove removes rel: a file, a symlink (not its target) or an empty
// directory.
func (t *Tree) Remove(rel string) error {
	d, name, err := t.at(rel)
	if err != nil {
		return err
	}
	err = d.root.Remove(name)
	t.dirs.forget(rel)
	return inTree(err, rel)
}

// RemoveAll removes rel and everything under it; symlinks under it are
// removed, not followed.
func (t *Tree) RemoveAll(rel string) error {
	d, name, err := t.at(rel)
	if errors.Is(err, fs.ErrNotExist) {
		return nil // nothing there, as os.RemoveAll says
	}
	if err != nil {
		return err
	}
	err = d.root.RemoveAll(name)
	t.dirs.forget(rel)
	return inTree(err, rel)
}

// Rename moves from to to, both inside the tree, replacing a file or
// symlink at to.
func (t *Tree) Rename(from, to string) error {
	df, fromName, ferr := t.at(from)
	if df != nil {
		df.pinned = true // kept open while to's directory is opened
	}
	dt, toName, terr := t.at(to)
	if df != nil {
		df.pinned = false
	}
	if err := errors.Join(ferr, terr); err != nil {
		return err
	}
	err := rename(df, fromName, dt, toName)
	t.dirs.forget(from)
	t.dirs.forget(to)
	if err != nil {
		var le *os.LinkError
		if errors.As(err, &le) {
			err = le.Err
		}
		return &os.LinkError{Op: "rename", Old: from, New: to, Err: err}
	}
	return nil
}

// Symlink makes a symlink at rel pointing to target.
func (t *Tree) Symlink(target, rel string) error {
	d, name, err := t.at(rel)
	if err != nil {
		return err
	}
	return inTree(d.root.Symlink(target, name), rel)
}

// Create makes a new file at rel (it must not exist) for writing.
func (t *Tree) Create(rel string, mode fs.FileMode) (*os.File, error) {
	d, name, err := t.at(rel)
	if err != nil {
		return nil, err
	}
	f, err := d.root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode.Perm())
	return f, inTree(err, rel)
}

// WriteFile writes data to a new or existing file at rel with mode, as
// atomicfile.WriteIn does inside the root: a reader, or the next start
// after a crash, sees the old content or the new, never a mix.
func (t *Tree) WriteFile(rel string, data []byte, mode fs.FileMode) error {
	d, name, err := t.at(rel)
	if err != nil {
		return err
	}
	if err := atomicfile.WriteIn(d.root, name, data, mode); err != nil {
		return fmt.Errorf("in %s: %w", d.rel, err)
	}
	return nil
}

// SetMeta sets the mode and modification time of the file or directory at
// rel (a symlink there is left alone).
func (t *Tree) SetMeta(rel string, mode fs.FileMode, mtime time.Time) error {
	d, name, err := t.at(rel)
	if err != nil {
		return err
	}
	fi, err := d.root.Lstat(name)
	if err != nil {
		return inTree(err, rel)
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return nil
	}
	if err := d.root.Chmod(name, mode.Perm()); err != nil {
		return fmt.Errorf("setting the mode of %s: %w", rel, err)
	}
	if !mtime.IsZero() {
		if err := d.root.Chtimes(name, mtime, mtime); err != nil {
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
