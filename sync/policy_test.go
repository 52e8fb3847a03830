package sync

import (
	"path"
	"strings"
	"testing"
)

func TestPolicyAllowed(t *testing.T) {
	p := Policy{Include: []string{".claude/settings.json", ".claude/hooks", "results", "home"}, Exclude: []string{"*.sqlite", "tmp/cache"}}
	cases := []struct {
		rel           string
		allowed, lead bool
	}{
		{".claude/settings.json", true, false},
		{".claude/hooks/pre.sh", true, false},
		{".claude", false, true},
		{".claude/credentials.json", false, false},
		{"results/out.txt", true, false},
		{"results/deep/er/x", true, false},
		{"resultsx", false, false},
		{"home/.ssh/id_rsa", false, false},
		{"home/.ssh", false, false},
		{"home/x/.aws/credentials", false, false},
		{"home/.config/gh/hosts.yml", false, false},
		{"home/.config/other", true, false},
		{"results/server.pem", false, false},
		{"results/id_ed25519.pub", false, false},
		{"results/tls.key", false, false},
		{"home/.git-credentials", false, false},
		{"home/.netrc", false, false},
		{"results/db.sqlite", false, false},
		{"results/tmp/cache/x", false, false},
		{"results/tmp/cachex", true, false},
		{ManifestName, false, false},
		{"../etc/passwd", false, false},
		{"/etc/passwd", false, false},
		{"results/../.ssh", false, false},
		{"results//x", false, false},
		{"", false, false},
	}
	for _, c := range cases {
		if got := p.Allowed(c.rel); got != c.allowed {
			t.Errorf("Allowed(%q) = %v, want %v", c.rel, got, c.allowed)
		}
		if got := p.Leads(c.rel); got != c.lead {
			t.Errorf("Leads(%q) = %v, want %v", c.rel, got, c.lead)
		}
	}
	// The blacklist cannot be whitelisted.
	q := Policy{Include: []string{".ssh", "keys/server.pem"}}
	for _, rel := range []string{".ssh", ".ssh/id_rsa", "keys/server.pem"} {
		if q.Allowed(rel) {
			t.Errorf("whitelisting %q let it cross", rel)
		}
	}
}

func TestPolicyValidate(t *testing.T) {
	for _, bad := range []Policy{{Include: []string{"../x"}}, {Include: []string{"/abs"}}, {Include: []string{"a//b"}}, {Exclude: []string{"[x"}}, {Exclude: []string{"a//b"}},
		{Include: []string{".sidecar-incoming-nux.1"}}} {
		if bad.Validate() == nil {
			t.Errorf("policy %+v accepted", bad)
		}
	}
	if err := DefaultPolicy().Validate(); err != nil {
		t.Errorf("default policy: %v", err)
	}
}

// TestAllowedChild: for a path whose directory Allowed lets through,
// AllowedChild says what Allowed says of the whole path, checking only its
// last element: every combination of a vocabulary of names (the
// blacklist's, an excluded pattern's, ordinary ones) three levels deep.
func TestAllowedChild(t *testing.T) {
	p := Policy{Include: []string{"results", ".claude/hooks"}, Exclude: []string{"*.tmp", "build/out"}}
	names := []string{"a", ".ssh", "id_rsa", "key.pem", ".config", "gh", "x.tmp", "build", "out", ".cache", "notes.md", "a\\b", ".."}
	checked := 0
	var walk func(dir string, depth int)
	walk = func(dir string, depth int) {
		if depth == 0 {
			return
		}
		for _, n := range names {
			child := dir + "/" + n
			if got, want := p.AllowedChild(dir, n), p.Allowed(child); got != want {
				t.Errorf("AllowedChild(%q, %q) = %v, Allowed(%q) = %v", dir, n, got, child, want)
			}
			checked++
			if p.Allowed(child) {
				walk(child, depth-1)
			}
		}
	}
	for _, inc := range p.Include {
		walk(inc, 3)
		walk(inc+"/.config", 2) // under a directory that leads to a run of a pattern
	}
	if checked < 1000 {
		t.Fatalf("checked %d paths", checked)
	}
}

// TestPolicyOverlap: two policies overlap when an include of one is, or
// is above or under, an include of the other; the defaults do not.
func TestPolicyOverlap(t *testing.T) {
	tests := []struct {
		name string
		p, q []string
		want bool
	}{
		{"defaults", DefaultInclude, DefaultRigInclude, false},
		{"same path", []string{"results", ".claude/settings.json"}, []string{".claude/settings.json"}, true},
		{"own above the rig's", []string{".claude"}, []string{".claude/settings.json"}, true},
		{"own under the rig's", []string{".claude/commands/mine.md"}, []string{".claude/commands"}, true},
		{"siblings", []string{".claude/settings.local.json"}, []string{".claude/settings.json"}, false},
		{"a prefix that is not a directory", []string{".claude/commandsx"}, []string{".claude/commands"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, b, ok := Policy{Include: tt.p}.Overlap(Policy{Include: tt.q})
			if ok != tt.want {
				t.Fatalf("Overlap = %q, %q, %v; want %v", a, b, ok, tt.want)
			}
		})
	}
}

// TestPatElemMatch holds the literal, prefix and suffix shortcuts to
// path.Match, the meaning a pattern's element has.
func TestPatElemMatch(t *testing.T) {
	tests := []struct {
		pat, name string
		kind      patKind
	}{
		{"*.pem", "server.pem", patSuffix},
		{"*.pem", ".pem", patSuffix},
		{"*.pem", "server.pem.bak", patSuffix},
		{"*", "anything", patSuffix},
		{"id_*", "id_ed25519", patPrefix},
		{"id_*", "xid_rsa", patPrefix},
		{"id_*", "id_", patPrefix},
		{".ssh", ".ssh", patLiteral},
		{".ssh", ".sshd", patLiteral},
		{"*.p?m", "a.pem", patGlob},
		{"*a*", "bab", patGlob},
		{`\*.pem`, "*.pem", patGlob},
		{"[a-", "a", patGlob},
		{"*.pem", "caf\xe9.pem", patSuffix},
	}
	for _, tt := range tests {
		el := compile(tt.pat)
		if len(el) != 1 || el[0].kind != tt.kind {
			t.Errorf("compile(%q) = %+v, want one element of kind %d", tt.pat, el, tt.kind)
			continue
		}
		want, _ := path.Match(tt.pat, tt.name)
		if got := el[0].match(tt.name); got != want {
			t.Errorf("%q matching %q: %v, path.Match says %v", tt.pat, tt.name, got, want)
		}
	}
}

// FuzzPatElem: an element matches a name exactly when path.Match says so.
func FuzzPatElem(f *testing.F) {
	for _, s := range [][2]string{{"*.pem", "a.pem"}, {"id_*", "id_rsa"}, {".ssh", ".ssh"}, {"*", ""}, {"a*b", "ab"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, pat, name string) {
		if strings.Contains(pat, "/") || strings.Contains(name, "/") {
			return // one element each
		}
		want, _ := path.Match(pat, name)
		if got := compile(pat)[0].match(name); got != want {
			t.Errorf("%q matching %q: %v, path.Match says %v", pat, name, got, want)
		}
	})
}
