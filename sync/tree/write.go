package tree

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/polecat-sidecar/sidecar/internal/atomicfile"
	"github.com/polecat-sidecar/sidecar/sync"
)

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
