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
//
// The directory is checked when it is opened (OpenDir: reached without a
// symlink, the directory Lstat saw), not again for each file of the run:
// a directory moved away meanwhile, out of the root even, is still the
// one its files are opened in. Only files a listing described, the same
// inodes, are opened through it (OpenAs), so what can be read that way
// is what the listing saw inside the root; and on hostd nothing a
// polecat sends moves a directory (a merge renames within the root). A
// path opened from the root's os.Root has the same gap while one file is
// read; here it lasts a directory's run.
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

// OpenAs opens, through rel's directory (Dir), the regular file at rel
// that a listing described as fi, or refuses: like Tree.OpenAs, but a
// symlink among rel's parents is refused even when it leads inside the
// root, and the directory is the one checked at the start of its run.
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
