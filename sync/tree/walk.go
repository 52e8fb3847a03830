package tree

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/polecat-sidecar/sidecar/sync"
)

// Walk calls visit for each path p lets cross in t, and for the
// directories (that exist) leading to an included path, each once, in
// sorted order, a directory before what is under it; a symlink is visited,
// never followed. A path whose name is not UTF-8, or that is deeper than
// sync.MaxDepth, is not visited but given to skip when it is set: a
// manifest, JSON, could not name it exactly, and its receiver would refuse
// the archive.
func (t *Tree) Walk(p sync.Policy, visit func(rel string, fi fs.FileInfo) error, skip func(rel string)) error {
	w := &walker{t: t, policy: p, visit: visit, skip: skip, done: map[string]bool{}}
	incs := slices.Clone(p.Includes())
	slices.Sort(incs)
	for _, inc := range incs {
		if err := w.leading(path.Dir(inc)); err != nil {
			return err
		}
		if err := w.walk(inc); err != nil {
			return err
		}
	}
	return nil
}

// walker is one Walk.
type walker struct {
	t      *Tree
	policy sync.Policy
	visit  func(rel string, fi fs.FileInfo) error
	skip   func(rel string)
	done   map[string]bool
}

// take visits rel, once.
func (w *walker) take(rel string, fi fs.FileInfo) error {
	w.done[rel] = true
	return w.visit(rel, fi)
}

// leading visits the directories above an included path, if they exist.
func (w *walker) leading(dir string) error {
	if dir == "." || w.done[dir] {
		return nil
	}
	if err := w.leading(path.Dir(dir)); err != nil {
		return err
	}
	fi, err := w.t.Lstat(dir)
	if err != nil || !fi.IsDir() {
		return nil // the include is not there; nothing to lead to
	}
	return w.take(dir, fi)
}

// walk visits rel and, for a directory, what is under it.
func (w *walker) walk(rel string) error {
	if w.done[rel] || !w.policy.Allowed(rel) {
		return nil
	}
	fi, err := w.t.Lstat(rel)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading %s: %w", rel, err)
	}
	return w.walkInfo(rel, fi)
}

// walkInfo visits rel, which a listing described as fi, and, for a
// directory, what is under it, described by its own listing.
func (w *walker) walkInfo(rel string, fi fs.FileInfo) error {
	if !utf8.ValidString(rel) || strings.Count(rel, "/") >= sync.MaxDepth {
		if w.skip != nil {
			w.skip(rel)
		}
		return nil
	}
	if err := w.take(rel, fi); err != nil {
		return err
	}
	if !fi.IsDir() {
		return nil
	}
	infos, err := w.t.readDirInfo(rel)
	if err != nil {
		return err
	}
	for _, ci := range infos {
		child := rel + "/" + ci.Name()
		if w.done[child] || !w.policy.AllowedChild(rel, ci.Name()) {
			continue
		}
		if err := w.walkInfo(child, ci); err != nil {
			return err
		}
	}
	return nil
}

// WalkAll calls visit for rel and everything under it, whatever the
// policy, following no symlink.
func (t *Tree) WalkAll(rel string, visit func(string, fs.FileInfo)) error {
	fi, err := t.Lstat(rel)
	if err != nil {
		return err
	}
	return t.walkAll(rel, fi, visit)
}

// walkAll is WalkAll for rel as a listing described it.
func (t *Tree) walkAll(rel string, fi fs.FileInfo, visit func(string, fs.FileInfo)) error {
	visit(rel, fi)
	if !fi.IsDir() {
		return nil
	}
	infos, err := t.readDirInfo(rel)
	if err != nil {
		return err
	}
	for _, ci := range infos {
		if err := t.walkAll(rel+"/"+ci.Name(), ci, visit); err != nil {
			return err
		}
	}
	return nil
}
