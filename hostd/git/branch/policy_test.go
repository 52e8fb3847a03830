package branch

import (
	"strings"
	"testing"

	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

func TestBranchPolicy(t *testing.T) {
	def, err := ParsePatterns(nil)
	if err != nil {
		t.Fatal(err)
	}
	// Names that prefix each other, both ways: bullet and bullet-farmer,
	// nux and nux2, a and a-b-c; every one known in the rig.
	known := []string{"furiosa", "bullet", "bullet-farmer", "nux", "nux2", "a", "a-b", "a-b-c", "Toast"}
	cases := []struct {
		name, ref string
		want      bool
		reason    string
	}{
		// Gas Town's three forms for each name.
		{"furiosa", "refs/heads/polecat/furiosa-mfx3k2a1", true, ""},
		{"furiosa", "refs/heads/polecat/furiosa/gt-42@mfx3k2a1", true, ""},
		{"furiosa", "refs/heads/polecat/furiosa", true, ""},
		{"furiosa", "refs/heads/polecat/furiosa-gt-123-x", true, ""},
		{"furiosa", "refs/heads/polecat/furiosa/a/b", true, ""},
		{"bullet-farmer", "refs/heads/polecat/bullet-farmer-mfx3k2a1", true, ""},
		{"bullet-farmer", "refs/heads/polecat/bullet-farmer/gt-7@mfx3k2a1", true, ""},
		{"bullet-farmer", "refs/heads/polecat/bullet-farmer", true, ""},
		{"bullet", "refs/heads/polecat/bullet-mfx3k2a1", true, ""},
		{"bullet", "refs/heads/polecat/bullet", true, ""},
		{"bullet", "refs/heads/polecat/bullet/gt-7@x", true, ""},
		{"Toast", "refs/heads/polecat/Toast-x", true, ""},
		// The longer name owns what both match.
		{"bullet", "refs/heads/polecat/bullet-farmer-mfx3k2a1", false, "belongs to gastown/bullet-farmer"},
		{"bullet", "refs/heads/polecat/bullet-farmer", false, "belongs to gastown/bullet-farmer"},
		{"bullet", "refs/heads/polecat/bullet-farmer/gt-7@x", false, "belongs to gastown/bullet-farmer"},
		{"bullet-farmer", "refs/heads/polecat/bullet-x", false, "belongs to gastown/bullet"},
		{"bullet-farmer", "refs/heads/polecat/bullet", false, "belongs to gastown/bullet"},
		{"a", "refs/heads/polecat/a-b-c-d", false, "belongs to gastown/a-b-c"},
		{"a-b", "refs/heads/polecat/a-b-c-d", false, "belongs to gastown/a-b-c"},
		{"a-b-c", "refs/heads/polecat/a-b-c-d", true, ""},
		{"a", "refs/heads/polecat/a-x", true, ""},
		{"a-b", "refs/heads/polecat/a-b-x", true, ""},
		// Names that are prefixes without a dash never collide.
		{"nux", "refs/heads/polecat/nux2-x", false, "belongs to gastown/nux2"},
		{"nux", "refs/heads/polecat/nux2", false, "belongs to gastown/nux2"},
		{"nux2", "refs/heads/polecat/nux-x", false, "belongs to gastown/nux"},
		{"nux2", "refs/heads/polecat/nux2/y", true, ""},
		// Not a branch of any known polecat.
		{"furiosa", "refs/heads/polecat/slit-x", false, "another polecat's branch"},
		{"furiosa", "refs/heads/polecat/furiosa-", false, "another polecat's branch"},
		{"furiosa", "refs/heads/polecat/furiosa/", false, "another polecat's branch"},
		{"furiosa", "refs/heads/polecat/Furiosa-x", false, "another polecat's branch"},
		{"furiosa", "refs/heads/polecat/furiosaX/y", false, "another polecat's branch"},
		{"furiosa", "refs/heads/polecat/-furiosa-x", false, "another polecat's branch"},
		{"furiosa", "refs/heads/polecat/nux/furiosa-x", false, "belongs to gastown/nux"},
		{"furiosa", "refs/heads/main", false, "not a polecat branch"},
		{"furiosa", "refs/heads//polecat/furiosa-x", false, "not a polecat branch"},
		{"furiosa", "refs/heads/x/refs/heads/polecat/furiosa-x", false, "not a polecat branch"},
		{"furiosa", "refs/tags/polecat/furiosa-x", false, "tags are not pushed"},
		{"furiosa", "refs/notes/commits", false, "outside refs/heads/polecat/"},
		{"furiosa", "refs/remotes/origin/polecat/furiosa-x", false, "outside"},
		{"furiosa", "HEAD", false, "outside"},
		{"furiosa", "polecat/furiosa-x", false, "outside"},
		{"furiosa", " refs/heads/polecat/furiosa-x", false, "outside"},
		{"furiosa", "", false, "outside"},
	}
	for _, c := range cases {
		id := wire.Identity{Rig: "gastown", Name: c.name}
		ok, why := def.Allowed(id, c.ref, known)
		if ok != c.want || !strings.Contains(why, c.reason) {
			t.Errorf("%s pushing %q: allowed %v (%s); want %v (%s)", c.name, c.ref, ok, why, c.want, c.reason)
		}
	}
	// An unknown longer name cannot be protected: what it would own is the
	// shorter name's until hostd has issued it a certificate.
	if ok, _ := def.Allowed(wire.Identity{Rig: "gastown", Name: "bullet"}, "refs/heads/polecat/bullet-farmer-x", []string{"bullet"}); !ok {
		t.Error("bullet refused a branch no known polecat owns more specifically")
	}
	if got := def.Describe("bullet-farmer"); got != "polecat/bullet-farmer, polecat/bullet-farmer/*, polecat/bullet-farmer-*" {
		t.Errorf("Describe: %q", got)
	}
}

func TestCustomBranchPatterns(t *testing.T) {
	// Gas Town's polecat_branch_template variables match any text.
	p, err := ParsePatterns([]string{"feature/{name}-{timestamp}", "adam/{year}/{month}/{name}/{description}"})
	if err != nil {
		t.Fatal(err)
	}
	known := []string{"alpha", "alpha-beta"}
	for ref, owner := range map[string]string{
		"refs/heads/feature/alpha-mfx3k2a1":          "alpha",
		"refs/heads/feature/alpha-beta-mfx3k2a1":     "alpha-beta",
		"refs/heads/adam/2026/11/alpha/fix-the-bug":  "alpha",
		"refs/heads/adam/2026/11/alpha-beta/x":       "alpha-beta",
		"refs/heads/polecat/alpha-x":                 "",
		"refs/heads/feature/alpha-":                  "",
		"refs/heads/adam/2026/11/alpha":              "",
		"refs/heads/adam/2026/11/alpha/":             "",
		"refs/heads/adam/2026/11/other/alpha/x":      "",
		"refs/heads/adam/2026/11/other/alpha-beta/x": "",
	} {
		for _, name := range known {
			ok, why := p.Allowed(wire.Identity{Rig: "r", Name: name}, ref, known)
			if ok != (owner == name) {
				t.Errorf("%s pushing %s: %v (%s); owner should be %q", name, ref, ok, why, owner)
			}
		}
	}
	// Patterns that could not decide ownership are refused at start.
	for _, bad := range []string{
		"", "polecat/*", "polecat/{name}/{name}", "refs/heads/polecat/{name}", "/polecat/{name}", "polecat/{name}-{sha}",
		"polecat/{name},x", "polecat/{name} x", "polecat/{name}..x", "polecat/{name}/**", "{name}-*-*-*-*-*", "polecat/{name}:x",
	} {
		if _, err := ParsePatterns([]string{bad}); err == nil {
			t.Errorf("pattern %q accepted", bad)
		}
	}
}

func TestOwnerTie(t *testing.T) {
	// Two names of one length both matching: nobody may push it.
	p, err := ParsePatterns([]string{"x-{name}", "{name}-y"})
	if err != nil {
		t.Fatal(err)
	}
	known := []string{"a-y", "x-a"}
	for _, n := range known {
		if ok, why := p.Allowed(wire.Identity{Rig: "r", Name: n}, "refs/heads/x-a-y", known); ok || !strings.Contains(why, "equally") {
			t.Errorf("%s: %v %s", n, ok, why)
		}
	}
}

// FuzzBranchPolicy: whatever the ref, at most one of a set of names that
// prefix each other may push it, and only a ref its patterns match.
func FuzzBranchPolicy(f *testing.F) {
	f.Add("refs/heads/polecat/bullet-farmer-x")
	f.Add("refs/heads/polecat/nux2")
	f.Add("refs/heads/polecat/a-b-c/d")
	p, err := ParsePatterns(nil)
	if err != nil {
		f.Fatal(err)
	}
	known := []string{"bullet", "bullet-farmer", "nux", "nux2", "a", "a-b", "a-b-c"}
	f.Fuzz(func(t *testing.T, ref string) {
		allowed := 0
		for _, n := range known {
			ok, _ := p.Allowed(wire.Identity{Rig: "r", Name: n}, ref, known)
			if !ok {
				continue
			}
			allowed++
			branch := strings.TrimPrefix(ref, "refs/heads/")
			if !strings.HasPrefix(ref, "refs/heads/polecat/"+n) || !p.matches(branch, n) {
				t.Fatalf("%q allowed for %s outside its patterns", ref, n)
			}
		}
		if allowed > 1 {
			t.Fatalf("%q allowed for %d polecats", ref, allowed)
		}
	})
}
