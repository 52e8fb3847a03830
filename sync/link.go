package sync

import (
	"fmt"
	"path"
	"strings"
)

// A symlink is judged by where the kernel would take it, not by its
// target's text: a target that looks inside once its ".." are cancelled
// (l/../../x) can still leave the root when l is itself a symlink, because
// the kernel follows l first and applies ".." to where it landed. So every
// component is walked from the link's directory, every symlink met on the
// way is followed through the tree as it is (or will be), and ".." is taken
// from where the walk has got to.

// maxLinkHops is how many symlinks one resolution follows, as Linux's
// MAXSYMLINKS: more is a loop.
const maxLinkHops = 40

// LinkView says whether a symlink is at rel in some tree, and its target:
// the tree a manifest describes (ManifestView), or one on disk.
type LinkView func(rel string) (target string, isLink bool)

// resolveLink is where a symlink at rel pointing to target leads in the
// tree view describes: the path inside the root where the walk ends ("."
// for the root itself) and the links it followed, the one at rel not
// counted. ok is false when the walk leaves the root, meets an absolute or
// empty target, or follows more than maxLinkHops links. A component that
// does not exist is walked as if it were a directory: what is missing now
// may be made later, and is judged again then.
func resolveLink(view LinkView, rel, target string) (to string, via []string, ok bool) {
	if target == "" || path.IsAbs(target) {
		return "", nil, false
	}
	var cur []string
	if dir := path.Dir(rel); dir != "." {
		cur = strings.Split(dir, "/")
	}
	todo := strings.Split(target, "/")
	for hops := 0; len(todo) > 0; {
		c := todo[0]
		todo = todo[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			if len(cur) == 0 {
				return "", via, false
			}
			cur = cur[:len(cur)-1]
			continue
		}
		p := strings.Join(append(cur[:len(cur):len(cur)], c), "/")
		if t, isLink := view(p); isLink {
			if hops++; hops > maxLinkHops || t == "" || path.IsAbs(t) {
				return "", append(via, p), false
			}
			via = append(via, p)
			todo = append(strings.Split(t, "/"), todo...)
			continue // the target is walked from the link's directory, cur
		}
		cur = append(cur, c)
	}
	if len(cur) == 0 {
		return ".", via, true
	}
	return strings.Join(cur, "/"), via, true
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

// ManifestView is the tree a manifest describes, by path (Manifest.Index).
func ManifestView(idx map[string]*Entry) LinkView {
	return func(rel string) (string, bool) {
		if e := idx[rel]; e != nil && e.Type == TypeSymlink {
			return e.Target, true
		}
		return "", false
	}
}
