// Package tree opens a data root for what the data channel does to it:
// one Tree, the only way the sync packages touch a data root on behalf of
// what a polecat sent. It also walks the paths a policy lets cross, keeps
// the staging directories transfers unpack into, and locks a root for one
// merge at a time.
package tree

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// Tree is a data root opened for the changes a transfer makes, by
// archive.Extract and merges alike. Every operation goes through os.Root,
// so no path leads out of the root, and follows no symlink: one among a
// path's parents is refused, naming it; one at the path is removed,
// replaced or read, never written through. Each is an operation on a name
// in its directory, held open (dirs.go); docs/security.md says why. Not
// safe for concurrent use: a transfer owns it.
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
