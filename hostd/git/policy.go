package git

import (
	"errors"
	"fmt"
	"strings"

	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// DefaultBranchPatterns are the branches Gas Town gives a polecat:
// polecat/<name>-<base36 ms> and polecat/<name>/<issue>@<base36 ms>
// (internal/polecat/manager.go) and the fallback polecat/<name>
// (cmd/done.go, cmd/start.go).
var DefaultBranchPatterns = []string{"polecat/{name}", "polecat/{name}/*", "polecat/{name}-*"}

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

// BranchPolicy says which polecat owns a branch. A branch belongs to the
// polecat with the longest name, among those known in the rig, for which
// it matches one of the patterns: polecat/bullet-farmer-x is
// bullet-farmer's, not bullet's, once bullet-farmer is known.
type BranchPolicy struct {
	patterns []pattern
}

// ParseBranchPatterns parses patterns such as "polecat/{name}-*": each has
// {name} exactly once; '*' matches any non-empty text, and Gas Town's
// template variables ({issue}, {timestamp}, ...) one non-empty path
// segment. No patterns means DefaultBranchPatterns.
func ParseBranchPatterns(list []string) (BranchPolicy, error) {
	if len(list) == 0 {
		list = DefaultBranchPatterns
	}
	var p BranchPolicy
	for _, raw := range list {
		pat, err := parsePattern(raw)
		if err != nil {
			return BranchPolicy{}, fmt.Errorf("branch pattern %q: %w", raw, err)
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

// Matches reports whether branch is one of name's by the patterns alone.
func (p BranchPolicy) Matches(branch, name string) bool {
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
func (p BranchPolicy) Owner(branch string, names []string) (owner string, ok bool) {
	tie := false
	for _, n := range names {
		if n == "" || !p.Matches(branch, n) {
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
func (p BranchPolicy) Describe(name string) string {
	parts := make([]string, len(p.patterns))
	for i, pat := range p.patterns {
		parts[i] = strings.ReplaceAll(pat.raw, "{name}", name)
	}
	return strings.Join(parts, ", ")
}

// Allowed says whether id may create, update, force-update or delete ref,
// its rig's known polecats being known (id itself is always counted). The
// reason names the ref's owner when another polecat owns it.
func (p BranchPolicy) Allowed(id wire.Identity, ref string, known []string) (ok bool, reason string) {
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

// policyEnv is what the pre-receive hook needs, beside the identity, to
// judge a push to rig: its branch patterns and its known polecats.
func (s *Service) policyEnv(rig string) ([]string, error) {
	patterns, known, err := s.rigPolicy(rig)
	if err != nil {
		return nil, err
	}
	return []string{PatternsEnv + "=" + strings.Join(patterns, ","), PolecatsEnv + "=" + strings.Join(known, ",")}, nil
}

// rigPolicy is rig's branch patterns and its known polecats.
func (s *Service) rigPolicy(rig string) (patterns, known []string, err error) {
	patterns = rigEntry(s.cfg.Branches, rig)
	if len(patterns) == 0 {
		patterns = DefaultBranchPatterns
	}
	known = rigEntry(s.cfg.Polecats, rig)
	if s.cfg.KnownPolecats != nil {
		issued, err := s.cfg.KnownPolecats(rig)
		if err != nil {
			return nil, nil, fmt.Errorf("listing rig %s's polecats for the push policy: %w", rig, err)
		}
		known = append(append([]string{}, known...), issued...)
	}
	return patterns, known, nil
}

// rigEntry is rig's entry in a per-rig setting. Config files reach us
// through viper, which lower-cases map keys, so a rig's entry is also
// found under its lower-cased name.
func rigEntry(m map[string][]string, rig string) []string {
	if v, ok := m[rig]; ok {
		return v
	}
	return m[strings.ToLower(rig)]
}
