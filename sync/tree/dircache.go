package tree

import (
	"io/fs"
	"os"
	"path"
)

// DirCache holds the last directory of a Tree it opened (OpenDir) open
// for a run of files in it. An archive lists, and is extracted, one
// directory's files after another, and a file reached through its own
// directory's descriptor costs one system call where a path from the
// tree's root costs one for each directory on the way (os.Root walks it).
// Not safe for concurrent use; make one with Tree.Dirs and Close it.
type DirCache struct {
	t    *Tree
	name string
	dir  *os.Root
}

// Dirs returns a DirCache over t.
func (t *Tree) Dirs() *DirCache { return &DirCache{t: t} }

// Dir is the directory rel (OpenDir), opened once for a run of calls
// naming it. It stays the cache's: do not close it.
func (d *DirCache) Dir(rel string) (*os.Root, error) {
	if d.dir != nil && d.name == rel {
		return d.dir, nil
	}
	d.Close()
	r, err := d.t.OpenDir(rel)
	if err != nil {
		return nil, err
	}
	d.dir, d.name = r, rel
	return r, nil
}

// OpenAs is Tree.OpenAs through rel's directory: the regular file at rel
// that a listing described as fi, or a refusal.
func (d *DirCache) OpenAs(rel string, fi fs.FileInfo) (*os.File, error) {
	if err := regular(rel, fi); err != nil {
		return nil, err
	}
	dir, err := d.Dir(path.Dir(rel))
	if err != nil {
		return nil, err
	}
	f, err := dir.Open(path.Base(rel))
	if err != nil {
		return nil, err
	}
	return same(rel, fi, f)
}

// Close closes the directory it holds, if any.
func (d *DirCache) Close() {
	if d.dir != nil {
		d.dir.Close()
		d.dir, d.name = nil, ""
	}
}
