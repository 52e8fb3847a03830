package git

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
// resolving its symlinks goes: the directories its entries' paths imply
// and its symlinks with their targets, each under its folded path (see
// foldPath), as a case-insensitive host finds them. Files are not kept: a
// path through a file fails on the host as one through nothing does.
type linkView struct {
	dirs  map[string]bool
	links map[string]linkEntry
	steps int // resolution steps left for the whole tree
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
	return &linkView{dirs: map[string]bool{}, links: map[string]linkEntry{}, steps: maxLinkSteps}
}

// addPath records the directories the parents of the entry at folded (a
// path as foldPath gives it) make; a gitlink makes its own path one too,
// checked out as an empty directory: pass it as folded + "/".
func (v *linkView) addPath(folded string) {
	for i := strings.LastIndexByte(folded, '/'); i > 0; i = strings.LastIndexByte(folded[:i], '/') {
		if v.dirs[folded[:i]] {
			break // and so are its parents
		}
		v.dirs[folded[:i]] = true
		if l, ok := v.links[folded[:i]]; ok {
			l.ambiguous = true
			v.links[folded[:i]] = l
		}
	}
}

// addLink records the symlink at path (folded as foldPath gives it) to
// target, a link's blob: git writes it with symlink(2), which ends it at
// its first NUL.
func (v *linkView) addLink(path, folded string, target []byte) {
	if i := bytes.IndexByte(target, 0); i >= 0 {
		target = target[:i]
	}
	v.addPath(folded)
	l, dup := v.links[folded]
	switch {
	case !dup:
		l = linkEntry{path: path, target: string(target), ambiguous: v.dirs[folded]}
	case l.target != string(target):
		l.ambiguous = true
	}
	v.links[folded] = l
}

// escapes says why the symlink at path (one of v's) may resolve outside
// the tree's root on the host, in words for the pushing polecat, or ""
// when it resolves inside. It resolves lexically from the link's
// directory, following every link of the tree it meets (a chain a -> b/..,
// b -> ../..), and refuses what it cannot judge from the tree alone: an
// absolute target, ".." out of a path the tree holds no directory at
// (there the host's own files decide, or the host fails), a name that
// folds alike to a link and a directory, too many links or steps, a target
// longer than a host takes.
func (v *linkView) escapes(path string) string {
	f := foldPath(path)
	start := v.links[f]
	dir := strings.Split(f, "/")
	dir = dir[:len(dir)-1]
	var rest []string
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
		rest = append(strings.Split(via.target, "/"), rest...)
		followed := false
		for len(rest) > 0 && !followed {
			if v.steps--; v.steps < 0 {
				return "the tree's links take too many steps to judge"
			}
			c := rest[0]
			rest = rest[1:]
			switch c {
			case "", ".":
			case "..":
				if len(dir) == 0 {
					return "it leaves the worktree" + through(via, start)
				}
				if !v.dirs[strings.Join(dir, "/")] {
					return fmt.Sprintf("it goes up out of %s, which the tree holds no directory at", quote(strings.Join(dir, "/")))
				}
				dir = dir[:len(dir)-1]
			default:
				dir = append(dir, foldPath(c))
				if l, ok := v.links[strings.Join(dir, "/")]; ok {
					dir, via, followed = dir[:len(dir)-1], l, true
				}
			}
		}
		if !followed {
			return ""
		}
	}
}

// through names the link a resolution went wrong at, when it is not the
// one being judged.
func through(via, start linkEntry) string {
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
