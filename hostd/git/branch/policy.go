// Package branch says which polecat owns a branch of its rig's
// repository, by the rig's branch patterns (Gas Town's polecat branch
// names by default) and the names of the polecats known there: what the
// pre-receive hook lets a polecat push, and which branches hostd queues
// for origin in a polecat's name.
package branch

import (
	"errors"
	"fmt"
	"strings"

	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// DefaultPatterns are the branches Gas Town gives a polecat:
// polecat/<name>-<base36 ms> and polecat/<name>/<issue>@<base36 ms>
// (internal/polecat/manager.go) and the fallback polecat/<name>
// (cmd/done.go, cmd/start.go).
var DefaultPatterns = []string{"polecat/{name}", "polecat/{name}/*", "polecat/{name}-*"}

// templateVars are the variables of Gas Town's polecat_branch_template
// other than {name}; each matches one non-empty path segment (no '/').
var templateVars = []string{"{user}", "{year}", "{month}", "{issue}", "{description}", "{timestamp}"}

// maxWildcards bounds the wildcards of one pattern, so matching a hostile
// ref name stays cheap.
const maxWildcards = 4

// token is one piece of a branch pattern.
type token struct {
	kind byte // 'l' literal, 'n' the polecat's name, '*' any non-empty text, 's' one non-empty segment
	text string
}

// pattern is one parsed branch pattern.
type pattern struct {
	raw    string
	tokens []token
}

// Policy says which polecat owns a branch. A branch belongs to the
// polecat with the longest name, among those known in the rig, for which
// it matches one of the patterns: polecat/bullet-farmer-x is
// bullet-farmer's, not bullet's, once bullet-farmer is known.
type Policy struct {
	patterns []pattern
}

// ParsePatterns parses patterns such as "polecat/{name}-*": each has
// {name} exactly once; '*' matches any non-empty text, and Gas Town's
// template variables ({issue}, {timestamp}, ...) one non-empty path
// segment. No patterns means DefaultPatterns.
func ParsePatterns(list []string) (Policy, error) {
	if len(list) == 0 {
		list = DefaultPatterns
	}
	var p Policy
	for _, raw := range list {
		pat, err := parsePattern(raw)
		if err != nil {
			return Policy{}, fmt.Errorf("branch pattern %q: %w", raw, err)
		}
		p.patterns = append(p.patterns, pat)
	}
	return p, nil
}

func parsePattern(raw string) (pattern, error) {
	switch {
	case strings.Count(raw, "{name}") != 1:
		return pattern{}, errors.New("needs {name} exactly once")
	case strings.HasPrefix(raw, "refs/"), strings.HasPrefix(raw, "/"):
		return pattern{}, errors.New("give the branch name, without refs/heads/")
	case strings.ContainsAny(raw, ", \t\n\\:?[~^") || strings.Contains(raw, ".."):
		return pattern{}, errors.New("has a character git refuses in branch names, or a comma")
	}
	s := raw
	for _, v := range templateVars {
		s = strings.ReplaceAll(s, v, "{}")
	}
	if strings.ContainsAny(strings.NewReplacer("{name}", "", "{}", "").Replace(s), "{}") {
		return pattern{}, errors.New("unknown {variable}: known are {name}, {user}, {year}, {month}, {issue}, {description}, {timestamp}")
	}
	var pat pattern
	pat.raw = raw
	for s != "" {
		switch {
		case strings.HasPrefix(s, "{name}"):
			pat.tokens = append(pat.tokens, token{kind: 'n'})
			s = s[len("{name}"):]
		case strings.HasPrefix(s, "{}"), s[0] == '*':
			kind, n := byte('s'), 2
			if s[0] == '*' {
				kind, n = '*', 1
			}
			if last := len(pat.tokens) - 1; last >= 0 && (pat.tokens[last].kind == '*' || pat.tokens[last].kind == 's') {
				return pattern{}, errors.New("two wildcards in a row")
			}
			pat.tokens = append(pat.tokens, token{kind: kind})
			s = s[n:]
		default:
			end := strings.IndexAny(s, "*{")
			if end < 0 {
				end = len(s)
			}
			pat.tokens = append(pat.tokens, token{kind: 'l', text: s[:end]})
			s = s[end:]
		}
	}
	wild := 0
	for _, t := range pat.tokens {
		if t.kind == '*' || t.kind == 's' {
			wild++
		}
	}
	if wild > maxWildcards {
		return pattern{}, fmt.Errorf("more than %d wildcards", maxWildcards)
	}
	return pat, nil
}

// match reports whether branch is tokens with name in place of {name}.
func match(tokens []token, name, branch string) bool {
	if len(tokens) == 0 {
		return branch == ""
	}
	switch t := tokens[0]; t.kind {
	case 'l':
		return strings.HasPrefix(branch, t.text) && match(tokens[1:], name, branch[len(t.text):])
	case 'n':
		return strings.HasPrefix(branch, name) && match(tokens[1:], name, branch[len(name):])
	default:
		for i := 1; i <= len(branch); i++ {
			if t.kind == 's' && branch[i-1] == '/' {
				return false
			}
			if match(tokens[1:], name, branch[i:]) {
				return true
			}
		}
		return false
	}
}

// matches reports whether branch is one of name's by the patterns alone.
func (p Policy) matches(branch, name string) bool {
	for _, pat := range p.patterns {
		if match(pat.tokens, name, branch) {
			return true
		}
	}
	return false
}

// Owner is the polecat among names (a rig's known polecats) that branch
// belongs to: the longest name it matches. ok is false when it matches
// none, or two names of that length (an ambiguity only custom patterns
// can make; then nobody may push it).
func (p Policy) Owner(branch string, names []string) (owner string, ok bool) {
	tie := false
	for _, n := range names {
		if n == "" || !p.matches(branch, n) {
			continue
		}
		switch {
		case len(n) > len(owner):
			owner, tie = n, false
		case len(n) == len(owner) && n != owner:
			tie = true
		}
	}
	return owner, owner != "" && !tie
}

// Describe lists the branches name may push, for refusal messages.
func (p Policy) Describe(name string) string {
	parts := make([]string, len(p.patterns))
	for i, pat := range p.patterns {
		parts[i] = strings.ReplaceAll(pat.raw, "{name}", name)
	}
	return strings.Join(parts, ", ")
}

// Allowed says whether id may create, update, force-update or delete ref,
// its rig's known polecats being known (id itself is always counted). The
// reason names the ref's owner when another polecat owns it.
func (p Policy) Allowed(id wire.Identity, ref string, known []string) (ok bool, reason string) {
	branch, isBranch := strings.CutPrefix(ref, "refs/heads/")
	switch {
	case strings.HasPrefix(ref, "refs/tags/"):
		return false, "tags are not pushed by polecats"
	case !isBranch:
		return false, "outside refs/heads/polecat/"
	}
	owner, ok := p.Owner(branch, append([]string{id.Name}, known...))
	switch {
	case ok && owner == id.Name:
		return true, ""
	case ok:
		return false, fmt.Sprintf("another polecat's branch (it belongs to %s/%s)", id.Rig, owner)
	case owner != "":
		return false, "another polecat's branch (two polecats' names match it equally)"
	case strings.HasPrefix(branch, "polecat/"):
		return false, "another polecat's branch"
	default:
		return false, "not a polecat branch"
	}
}
