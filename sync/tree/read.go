package tree

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/polecat-sidecar/sidecar/sync"
)

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
