package sync

import "strings"

// PathTree holds a value at each of some paths, found from its top one
// name at a time, each step costing the name, not the path it has reached:
// the in-memory trees a LinkView walks (ManifestView, a merge's plan).
// The zero PathTree is an empty tree.
type PathTree[V any] struct {
	// Value is what the tree holds at this node's path.
	Value V
	kids  map[string]*PathTree[V]
}

// At is the node at rel, a clean relative path ("." for t itself), made
// with the nodes above it if missing.
func (t *PathTree[V]) At(rel string) *PathTree[V] {
	if rel == "." {
		return t
	}
	n := t
	for name := range strings.SplitSeq(rel, "/") {
		k := n.kids[name]
		if k == nil {
			if n.kids == nil {
				n.kids = map[string]*PathTree[V]{}
			}
			k = &PathTree[V]{}
			n.kids[name] = k
		}
		n = k
	}
	return n
}

// Child is the node at name under t, nil when the tree holds nothing
// there nor under it.
func (t *PathTree[V]) Child(name string) *PathTree[V] {
	return t.kids[name]
}
