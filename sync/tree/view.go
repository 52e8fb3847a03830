package tree

import (
	"io/fs"
	"os"
	"strings"

	"github.com/polecat-sidecar/sidecar/sync"
)

// View is the tree on disk as sync.Policy.JudgeLink walks it: the
// sync.LinkView of its root. A lookup is one Lstat (and a Readlink for a
// symlink) of a name in its directory, held open in one chain from the
// root to the last looked in, so it costs the name, not the path; what it
// finds is kept for the view's life (one pack or merge), what is missing
// looked at again (docs/security.md, the long targets' row). A path under
// a symlink or file, or that sync.ValidRel refuses, holds no link.
type View struct {
	top   viewDir
	chain []*viewDir // the directories held open: chain[i] is i+1 levels down, in chain[i-1] (in the root for chain[0])
}

// View is a view of t for judging links, until t changes; the caller
// closes it.
func (t *Tree) View() *View {
	v := &View{}
	v.top = viewDir{v: v, root: t.root}
	return v
}

// Child is what the root holds at name (sync.LinkView).
func (v *View) Child(name string) (sync.LinkView, string, bool) {
	return v.top.Child(name)
}

// Close closes the directories the view holds open.
func (v *View) Close() {
	v.cut(0)
}

// cut closes what the chain holds below its first n directories.
func (v *View) cut(n int) {
	for _, d := range v.chain[n:] {
		d.root.Close()
		d.root = nil
	}
	clear(v.chain[n:])
	v.chain = v.chain[:n]
}

// viewDir is a real directory of a View's tree.
type viewDir struct {
	v      *View
	parent *viewDir
	name   string
	depth  int         // levels below the root
	fi     fs.FileInfo // what Lstat saw of it in its parent
	// root is the directory while it is held open: always for the root,
	// for the others while they are in the view's chain.
	root *os.Root
	kids map[string]viewEntry // what each name looked at holds, when something does
}

// viewEntry is what a name in a viewDir holds: a directory, a symlink and
// its target, or (both zero) something else.
type viewEntry struct {
	dir    *viewDir
	target string
	isLink bool
}

// Child is what d holds at name (sync.LinkView).
func (d *viewDir) Child(name string) (sync.LinkView, string, bool) {
	e, ok := d.kids[name]
	if !ok {
		if e, ok = d.look(name); ok {
			if d.kids == nil {
				d.kids = map[string]viewEntry{}
			}
			d.kids[name] = e
		}
	}
	if e.dir == nil {
		return nil, e.target, e.isLink
	}
	return e.dir, e.target, e.isLink
}

// look is what d holds at name, as Lstat and Readlink find it there; ok
// is false when nothing is, or it could not be looked at.
func (d *viewDir) look(name string) (e viewEntry, ok bool) {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "\\\x00") {
		return viewEntry{}, false // not an element of a path a Tree operates on (sync.ValidRel)
	}
	r, err := d.open()
	if err != nil {
		return viewEntry{}, false
	}
	fi, err := r.Lstat(name)
	switch {
	case err != nil:
		return viewEntry{}, false
	case fi.Mode()&fs.ModeSymlink != 0:
		target, err := r.Readlink(name)
		return viewEntry{target: target, isLink: err == nil}, err == nil
	case fi.IsDir():
		return viewEntry{dir: &viewDir{v: d.v, parent: d, name: name, depth: d.depth + 1, fi: fi}}, true
	}
	return viewEntry{}, true
}

// open is d held open: the view's chain moved to end at d, what it held
// below d's parent closed and d opened in its parent (itself opened in
// the same way if it is not).
func (d *viewDir) open() (*os.Root, error) {
	if d.root != nil {
		return d.root, nil
	}
	parent, err := d.parent.open()
	if err != nil {
		return nil, err
	}
	d.v.cut(d.depth - 1)
	if d.root, err = openSeen(parent, d.name, d.fi); err != nil {
		return nil, err
	}
	d.v.chain = append(d.v.chain, d)
	return d.root, nil
}
