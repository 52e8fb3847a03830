package sync

import (
	"fmt"
	"path"
	"strings"
)

// A symlink is judged by where the kernel would take it, not by its
// target's text (l/../../x leaves the root when l is itself a link): each
// component walked from the link's directory, each link met followed
// through the tree as it is or will be, ".." taken where the walk stands,
// each component one lookup in the directory it stands in, never by the
// whole path (that cost the square of the target's length). docs/security.md,
// "Secrets and the host's files, through the data channel", says why.

// maxLinkHops is how many symlinks one resolution follows, as Linux's
// MAXSYMLINKS: more is a loop.
const maxLinkHops = 40

// LinkView is a directory of some tree, as resolving a symlink walks it:
// the tree a manifest describes (ManifestView), one on disk, or one as a
// merge will leave it. JudgeLink takes the view of the tree's root.
type LinkView interface {
	// Child is what the directory holds at name, one element of a path:
	// isLink and its target when that is a symlink, and, whatever it is,
	// dir, the view of what is under it, nil when nothing under it is a
	// symlink (nothing is there, or a file is).
	Child(name string) (dir LinkView, target string, isLink bool)
}

// resolveLink is where a symlink at rel pointing to target leads in the
// tree whose root is top: the path inside the root where the walk ends
// ("." for the root itself) and the links it followed, the one at rel not
// counted. ok is false when the walk leaves the root, meets an absolute or
// empty target, or follows more than maxLinkHops links. A missing
// component is walked as a directory: made later, it is judged again then.
func resolveLink(top LinkView, rel, target string) (to string, via []string, ok bool) {
	if target == "" || path.IsAbs(target) {
		return "", nil, false
	}
	// The walk stands in the directory names leads to from the root;
	// dirs holds the view of each directory on the way, the root's first
	// (nil below a name that holds no link under it).
	var names []string
	dirs := []LinkView{top}
	child := func(name string) (LinkView, string, bool) {
		if d := dirs[len(dirs)-1]; d != nil {
			return d.Child(name)
		}
		return nil, "", false
	}
	if dir := path.Dir(rel); dir != "." {
		for name := range strings.SplitSeq(dir, "/") {
			d, _, _ := child(name)
			names, dirs = append(names, name), append(dirs, d)
		}
	}
	// todo is what is left of each target being walked, the innermost
	// last: a link's target is walked before the rest of the one naming
	// it, from the link's directory, where the walk stands.
	todo := []string{target}
	for hops := 0; len(todo) > 0; {
		c, rest, more := strings.Cut(todo[len(todo)-1], "/")
		if more {
			todo[len(todo)-1] = rest
		} else {
			todo = todo[:len(todo)-1]
		}
		switch c {
		case "", ".":
			continue
		case "..":
			if len(names) == 0 {
				return "", via, false
			}
			names, dirs = names[:len(names)-1], dirs[:len(dirs)-1]
			continue
		}
		d, t, isLink := child(c)
		if isLink {
			p := strings.Join(append(names[:len(names):len(names)], c), "/")
			if hops++; hops > maxLinkHops || t == "" || path.IsAbs(t) {
				return "", append(via, p), false
			}
			via = append(via, p)
			todo = append(todo, t)
			continue
		}
		names, dirs = append(names, c), append(dirs, d)
	}
	if len(names) == 0 {
		return ".", via, true
	}
	return strings.Join(names, "/"), via, true
}

// LinkError is a symlink refused because of where it leads.
type LinkError struct {
	// Path is the symlink, Target its text.
	Path, Target string
	// Via lists the other symlinks the kernel would follow on the way.
	Via []string
	// To is where it leads when that is inside the root but not a path
	// the policy lets cross; empty when it leaves the root.
	To string
}

func (e *LinkError) Error() string {
	where := "outside the data root"
	if e.To != "" {
		where = fmt.Sprintf("to %s, which is not a path that crosses", e.To)
	}
	via := ""
	if len(e.Via) > 0 {
		via = " (through the symlink " + strings.Join(e.Via, ", then ") + ")"
	}
	return fmt.Sprintf("symlink %s -> %s leads %s%s", e.Path, e.Target, where, via)
}

// JudgeLink refuses a symlink at rel pointing to target unless, resolved
// through view, it leads to a path the policy lets cross (or a directory
// leading to one), so nothing can be reached through it that the policy
// keeps out.
func (p Policy) JudgeLink(view LinkView, rel, target string) error {
	to, via, ok := resolveLink(view, rel, target)
	if !ok {
		return &LinkError{Path: rel, Target: target, Via: via}
	}
	if !p.Allowed(to) && !p.Leads(to) {
		return &LinkError{Path: rel, Target: target, Via: via, To: to}
	}
	return nil
}

// ManifestView is the tree a manifest describes, by path (Manifest.Index),
// as the LinkView of its root: its paths are put in a PathTree once, so
// that each lookup costs a name, not a path.
func ManifestView(idx map[string]*Entry) LinkView {
	top := &PathTree[*Entry]{}
	for rel, e := range idx {
		top.At(rel).Value = e
	}
	return (*manifestDir)(top)
}

// manifestDir is a directory of the tree a manifest describes, holding
// each entry at its path.
type manifestDir PathTree[*Entry]

// Child is the entry at name and what is under it.
func (d *manifestDir) Child(name string) (LinkView, string, bool) {
	n := (*PathTree[*Entry])(d).Child(name)
	if n == nil {
		return nil, "", false
	}
	var dir LinkView
	if n.kids != nil {
		dir = (*manifestDir)(n)
	}
	if e := n.Value; e != nil && e.Type == TypeSymlink {
		return dir, e.Target, true
	}
	return dir, "", false
}
