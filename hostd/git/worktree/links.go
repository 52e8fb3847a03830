package worktree

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// Bounds of symlink resolution. A host's kernel follows at most 40 links
// in one path (Linux's ELOOP; macOS allows 32) and takes targets of at
// most PATH_MAX (4096) bytes; maxLinkSteps bounds the work of judging
// every link of one tree, which a hostile tree of long chains could
// otherwise make quadratic.
const (
	maxLinkHops   = 40
	maxLinkTarget = 4096
	maxLinkSteps  = 4 << 20
)

// linkView is what a tree makes on the host's file system, as far as
// resolving its symlinks goes: the directories its paths imply and its
// symlinks with their targets, a tree of names folded by foldPath (files
// are not kept: a path through one fails as through nothing). Resolution
// looks one name up at a time where it stands, so each name of a target
// costs the same however deep the walk is.
type linkView struct {
	root  viewNode
	steps int       // resolution steps left for the whole tree
	walk  []walkDir // escapes' stack, kept for the next link's
}

// viewNode is a name of a linkView: the names under it (folded), whether
// it is a directory, and its symlink, if it is one. A name that is a
// directory and a link is two entries that fold alike. A path's empty
// first name (the tree's names cannot be empty, but one may fold to
// nothing, as "\u200c" does) has names under it but is no directory.
type viewNode struct {
	names map[string]*viewNode
	dir   bool
	link  *linkEntry
}

// walkDir is a directory a resolution stands in: its folded name, and its
// node, nil when the tree holds nothing there.
type walkDir struct {
	name string
	node *viewNode
}

// linkEntry is a symlink of a linkView: its path as the tree names it and
// its target, or ambiguous when two entries that fold alike are a link
// and a directory, or links to two targets (which of them a
// case-insensitive host holds depends on the order git writes them in).
type linkEntry struct {
	path, target string
	ambiguous    bool
}

func newLinkView() *linkView {
	return &linkView{root: viewNode{dir: true}, steps: maxLinkSteps}
}

// addPath records the directories the parents of the entry at folded (a
// path as foldPath gives it) make; a gitlink makes its own path one too,
// checked out as an empty directory: pass it as folded + "/".
func (v *linkView) addPath(folded string) {
	v.parent(folded)
}

// parent records the parents of folded as addPath does, marking a link
// one of them folds alike to ambiguous, and returns the last one's node
// and folded's last name.
func (v *linkView) parent(folded string) (*viewNode, string) {
	at := &v.root
	for {
		name, rest, more := strings.Cut(folded, "/")
		if !more {
			return at, name
		}
		n := at.child(name)
		if !n.dir && (at != &v.root || name != "") {
			n.dir = true
			if n.link != nil {
				n.link.ambiguous = true
			}
		}
		at, folded = n, rest
	}
}

// child is n's name, made when n has none.
func (n *viewNode) child(name string) *viewNode {
	c := n.names[name]
	if c == nil {
		c = &viewNode{}
		if n.names == nil {
			n.names = map[string]*viewNode{}
		}
		n.names[name] = c
	}
	return c
}

// addLink records the symlink at path (folded as foldPath gives it) to
// target, a link's blob: git writes it with symlink(2), which ends it at
// its first NUL.
func (v *linkView) addLink(path, folded string, target []byte) {
	if i := bytes.IndexByte(target, 0); i >= 0 {
		target = target[:i]
	}
	at, name := v.parent(folded)
	n := at.child(name)
	switch {
	case n.link == nil:
		n.link = &linkEntry{path: path, target: string(target), ambiguous: n.dir}
	case n.link.target != string(target):
		n.link.ambiguous = true
	}
}

// find is v's symlink at path, nil when v holds none there, and walk with
// the names from v's root to its parent appended.
func (v *linkView) find(path string, walk []walkDir) (*linkEntry, []walkDir) {
	walk = append(walk, walkDir{node: &v.root})
	for rest := foldPath(path); ; {
		name, r, more := strings.Cut(rest, "/")
		n := walk[len(walk)-1].node.names[name]
		switch {
		case n == nil:
			return nil, walk
		case !more:
			return n.link, walk
		}
		walk, rest = append(walk, walkDir{name, n}), r
	}
}

// target is the target of v's symlink at path, "" when v holds none there.
func (v *linkView) target(path string) string {
	l, walk := v.find(path, v.walk[:0])
	v.walk = walk[:0]
	if l == nil {
		return ""
	}
	return l.target
}

// escapes says why the symlink at path (one of v's) may resolve outside
// the tree's root on the host, in words for the pushing polecat, or ""
// when it resolves inside or is none of v's. It resolves lexically, one
// name a step on a stack of directories that ".." pops, following the
// tree's links, and refuses what the tree alone cannot settle: an absolute
// target, ".." out of no directory, a name both a link and a directory,
// too many links or steps, a target too long (docs/security.md).
func (v *linkView) escapes(path string) string {
	start, walk := v.find(path, v.walk[:0])
	defer func() { v.walk = walk[:0] }()
	if start == nil {
		return ""
	}
	// What is left of each target being resolved, the innermost last: a
	// link's target is resolved before the rest of the one that named it.
	var pending [maxLinkHops]string
	stack := pending[:0]
	for via, hops := start, 0; ; hops++ {
		switch {
		case hops >= maxLinkHops:
			return fmt.Sprintf("it goes through more than %d links", maxLinkHops)
		case via.ambiguous:
			return fmt.Sprintf("%s is a link and a directory, or two links, on a host whose names ignore case or Unicode form", quote(via.path))
		case len(via.target) > maxLinkTarget:
			return fmt.Sprintf("the target of %s is longer than %d bytes", quote(via.path), maxLinkTarget)
		case strings.HasPrefix(via.target, "/"):
			return "it reaches an absolute path" + through(via, start)
		}
		stack = append(stack, via.target)
		var followed *linkEntry
		for len(stack) > 0 && followed == nil {
			if v.steps--; v.steps < 0 {
				return "the tree's links take too many steps to judge"
			}
			top := len(stack) - 1
			c, rest, more := strings.Cut(stack[top], "/")
			if more {
				stack[top] = rest // "a/" is "a" and then ""
			} else {
				stack = stack[:top]
			}
			here := walk[len(walk)-1]
			switch c {
			case "", ".":
			case "..":
				switch {
				case len(walk) == 1:
					return "it leaves the worktree" + through(via, start)
				case here.node == nil || !here.node.dir:
					return fmt.Sprintf("it goes up out of %s, which the tree holds no directory at", quote(walkPath(walk)))
				}
				walk = walk[:len(walk)-1]
			default:
				name := foldPath(c)
				var n *viewNode
				if here.node != nil {
					n = here.node.names[name]
				}
				if n != nil && n.link != nil {
					followed = n.link
				} else {
					walk = append(walk, walkDir{name, n})
				}
			}
		}
		if followed == nil {
			return ""
		}
		via = followed
	}
}

// walkPath is the folded path of the directory walk stands in.
func walkPath(walk []walkDir) string {
	names := make([]string, 0, len(walk)-1)
	for _, d := range walk[1:] {
		names = append(names, d.name)
	}
	return strings.Join(names, "/")
}

// through names the link a resolution went wrong at, when it is not the
// one being judged.
func through(via, start *linkEntry) string {
	if via == start {
		return ""
	}
	return " through " + quote(via.path)
}

// quote shows a name the polecat gave in Go's quoted form, in ASCII: every
// control, every byte that is not UTF-8 and every other rune escaped, so
// that no terminal acts on it and the look-alikes a Mac folds together
// (the Kelvin sign for K, the characters HFS+ ignores) show; cut to 200
// bytes.
func quote(s string) string {
	if len(s) > 200 {
		return strconv.QuoteToASCII(s[:200]) + "..."
	}
	return strconv.QuoteToASCII(s)
}
