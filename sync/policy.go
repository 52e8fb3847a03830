package sync

import (
	"fmt"
	"path"
	"strings"
)

// Blacklist is always excluded and cannot be whitelisted: secrets a
// container must never receive or send. A pattern without a slash matches
// any one path element (path.Match syntax); one with slashes matches that
// run of elements anywhere in a path. Whatever lies under a match is
// excluded too. It is compiled when the package is initialised; changing
// it later changes nothing.
var Blacklist = []string{
	".ssh", ".gnupg", ".aws", ".azure", ".kube", ".docker", ".netrc", ".config/gh",
	".cache", ".npm", ".pki", ".git-credentials", "*.pem", "*.key", "id_*",
}

// DefaultInclude suits a polecat's own data root (its directory in the
// rig), whose paths cross both ways: the prime and overlay files an agent
// reads at start, and a results directory for what it produces.
var DefaultInclude = []string{"CLAUDE.md", "AGENTS.md", "results"}

// DefaultRigInclude suits the directory a rig's polecats share (Gas
// Town's <rig>/polecats): Claude Code's settings, commands and hooks, which
// Gas Town keeps in its .claude for every polecat of the rig. They go into
// each container and never come back.
var DefaultRigInclude = []string{".claude/settings.json", ".claude/commands", ".claude/hooks"}

// Policy says which paths under a data root cross. Paths are relative to
// the root, slash-separated.
type Policy struct {
	// Include lists the files and directories that cross (a directory
	// with everything under it); DefaultInclude when empty.
	Include []string
	// Exclude adds patterns to Blacklist.
	Exclude []string
}

// DefaultPolicy is DefaultInclude with the blacklist alone.
func DefaultPolicy() Policy { return Policy{Include: DefaultInclude} }

// Validate checks the policy's paths and patterns.
func (p Policy) Validate() error {
	for _, inc := range p.Includes() {
		if !ValidRel(inc) {
			return fmt.Errorf("sync policy: include %q: want a path relative to the data root, like .claude/hooks", inc)
		}
		if reserved(inc) {
			return fmt.Errorf("sync policy: include %q: names starting %s are the data channel's own and never cross", inc, ReservedPrefix)
		}
	}
	for _, pat := range p.Exclude {
		for _, el := range strings.Split(pat, "/") {
			if _, err := path.Match(el, ""); err != nil || el == "" {
				return fmt.Errorf("sync policy: exclude pattern %q is malformed", pat)
			}
		}
	}
	return nil
}

// Includes is the paths that cross: Include, or DefaultInclude when it is
// empty.
func (p Policy) Includes() []string {
	if len(p.Include) == 0 {
		return DefaultInclude
	}
	return p.Include
}

// Allowed says whether rel crosses: it is, or is under, an included path,
// and neither it nor any directory above it matches the blacklist or an
// excluded pattern. The manifest's own name never crosses as data.
func (p Policy) Allowed(rel string) bool {
	if !ValidRel(rel) || reserved(rel) || p.Excluded(rel) {
		return false
	}
	for _, inc := range p.Includes() {
		if rel == inc || strings.HasPrefix(rel, inc+"/") {
			return true
		}
	}
	return false
}

// Overlap finds an include of p and one of q that name the same path, or
// one a path under the other (ok false when there is none): a path is
// either a polecat's own or its rig's, never both.
func (p Policy) Overlap(q Policy) (a, b string, ok bool) {
	for _, a := range p.Includes() {
		for _, b := range q.Includes() {
			if a == b || strings.HasPrefix(a, b+"/") || strings.HasPrefix(b, a+"/") {
				return a, b, true
			}
		}
	}
	return "", "", false
}

// Leads says whether rel is a directory on the way to an included path,
// which a walk must enter (and an archive may hold) without it crossing as
// a whole.
func (p Policy) Leads(rel string) bool {
	if !ValidRel(rel) || p.Excluded(rel) {
		return false
	}
	for _, inc := range p.Includes() {
		if strings.HasPrefix(inc, rel+"/") {
			return true
		}
	}
	return false
}

// Excluded says whether rel, or a directory above it, matches the
// blacklist or an excluded pattern.
func (p Policy) Excluded(rel string) bool {
	els := strings.Split(rel, "/")
	for _, pat := range blacklist {
		if matchRun(pat, els) {
			return true
		}
	}
	for _, pat := range p.Exclude {
		if matchRun(compile(pat), els) {
			return true
		}
	}
	return false
}

// blacklist is Blacklist compiled, once: Excluded runs for every path of
// a transfer.
var blacklist = func() [][]patElem {
	out := make([][]patElem, len(Blacklist))
	for i, pat := range Blacklist {
		out[i] = compile(pat)
	}
	return out
}()

// patElem is one element of a pattern, matched as path.Match would: a
// literal compared, a lone leading or trailing '*' around a literal (the
// blacklist's *.pem, id_*) as a suffix or prefix, anything else through
// path.Match. Excluded runs for every path of a transfer, twice on a pull.
type patElem struct {
	s    string // the element; for prefix and suffix, its literal part
	kind patKind
}

// patKind is how a patElem matches.
type patKind uint8

const (
	patLiteral patKind = iota
	patSuffix          // *s
	patPrefix          // s*
	patGlob
)

// compile splits a pattern into its elements.
func compile(pat string) []patElem {
	els := strings.Split(pat, "/")
	out := make([]patElem, len(els))
	for i, el := range els {
		switch {
		case !strings.ContainsAny(el, `*?[\`):
			out[i] = patElem{s: el, kind: patLiteral}
		case strings.HasPrefix(el, "*") && !strings.ContainsAny(el[1:], `*?[\`):
			out[i] = patElem{s: el[1:], kind: patSuffix}
		case strings.HasSuffix(el, "*") && !strings.ContainsAny(el[:len(el)-1], `*?[\`):
			out[i] = patElem{s: el[:len(el)-1], kind: patPrefix}
		default:
			out[i] = patElem{s: el, kind: patGlob}
		}
	}
	return out
}

// match says whether name, one element of a path, matches the element.
func (e patElem) match(name string) bool {
	switch e.kind {
	case patLiteral:
		return e.s == name
	case patSuffix:
		return strings.HasSuffix(name, e.s)
	case patPrefix:
		return strings.HasPrefix(name, e.s)
	}
	m, _ := path.Match(e.s, name)
	return m
}

// AllowedChild is Allowed for name in a directory dir that Allowed (or,
// for an include's own path, the include) already let through: only what
// the new element adds is checked (the runs of the blacklist and excluded
// patterns that end at it), so a walk pays for one element a path, not
// for all of them.
func (p Policy) AllowedChild(dir, name string) bool {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\\\x00") {
		return false
	}
	for _, pat := range blacklist {
		if matchEnding(pat, dir, name) {
			return false
		}
	}
	for _, pat := range p.Exclude {
		if matchEnding(compile(pat), dir, name) {
			return false
		}
	}
	return true
}

// matchEnding says whether the pattern's elements match the run of
// elements ending with name, in dir/name.
func matchEnding(pat []patElem, dir, name string) bool {
	rel := name
	for i := len(pat) - 1; ; i-- {
		if !pat[i].match(rel) {
			return false
		}
		if i == 0 {
			return true
		}
		if dir == "" || dir == "." {
			return false
		}
		j := strings.LastIndexByte(dir, '/')
		rel, dir = dir[j+1:], dir[:max(j, 0)]
		if j < 0 {
			dir = ""
		}
	}
}

// matchRun says whether the pattern's elements match a run of els.
func matchRun(pat []patElem, els []string) bool {
	for i := 0; i+len(pat) <= len(els); i++ {
		ok := true
		for j, p := range pat {
			if !p.match(els[i+j]) {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}

// ValidRel is a clean, relative, slash-separated path inside the root.
func ValidRel(rel string) bool {
	return rel != "" && rel != "." && path.Clean(rel) == rel && !path.IsAbs(rel) && rel != ".." &&
		!strings.HasPrefix(rel, "../") && !strings.ContainsRune(rel, 0) && !strings.Contains(rel, "\\")
}

// ReservedPrefix starts every name the data channel keeps for itself in a
// data root (the manifest, staging directories): none crosses as data.
const ReservedPrefix = ".sidecar-"

// reserved says whether rel is, or is under, a name the data channel keeps
// for itself at the top of a data root (the manifest, staging
// directories): such paths never cross.
func reserved(rel string) bool {
	return strings.HasPrefix(rel, ReservedPrefix)
}

// SymlinkInside says whether a symlink at rel pointing to target stays
// inside the root by its text alone: target relative, and rel's directory
// joined with it still a path inside. It is only a first check: JudgeLink
// follows the links on the way.
func SymlinkInside(rel, target string) bool {
	if target == "" || path.IsAbs(target) {
		return false
	}
	return ValidRel(path.Join(path.Dir(rel), target))
}
