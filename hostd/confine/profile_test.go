package confine

import (
	"strings"
	"testing"
)

func TestProfile(t *testing.T) {
	p := Policy{Rules: []Rule{
		{"/town/rig/.beads", Read | Write},
		{"/usr", Read | Exec},
		{"/dev/null", Device},
		{`/odd "quoted" \path`, Read},
		{"/town/rig/polecats", List},
	}}
	got, err := Profile(p)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"(version 1)\n(allow default)\n(deny file-read-data file-write* file-ioctl process-exec*)\n",
		`(allow file-read-data (subpath "/dev/null"))`,
		`(allow file-write* (subpath "/dev/null"))`,
		`(allow file-ioctl (subpath "/dev/null"))`,
		`(allow file-read-data (subpath "/odd \"quoted\" \\path"))`,
		`(allow file-read-data (subpath "/town/rig/.beads"))`,
		`(allow file-write* (subpath "/town/rig/.beads"))`,
		`(allow file-read-data (subpath "/usr"))`,
		`(allow process-exec* (subpath "/usr"))`,
		`(allow file-read-data (literal "/town/rig/polecats"))`,
	}
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("profile lacks %s:\n%s", w, got)
		}
	}
	// Nothing is granted that no rule asked for: one allow line per right
	// per rule, the deny first, so that later allows win.
	if n := strings.Count(got, "(allow "); n != 9+1 {
		t.Errorf("%d allow lines, want 10 (nine granted rights and the default):\n%s", n, got)
	}
	for _, bad := range []string{`(allow process-exec* (subpath "/town`, `(allow file-write* (subpath "/usr`, `(allow file-write* (subpath "/odd`,
		`(allow file-read-data (subpath "/town/rig/polecats"))`} {
		if strings.Contains(got, bad) {
			t.Errorf("profile grants %s:\n%s", bad, got)
		}
	}
	if !strings.HasPrefix(got, want[0]) {
		t.Errorf("profile does not open with the version, the default and the deny:\n%s", got)
	}
}

func TestProfileRefusesControlCharacters(t *testing.T) {
	for _, path := range []string{"/a\nb", "/a\x00b", "/a\x7fb", "/a\x1b[31mb"} {
		if _, err := Profile(Policy{Rules: []Rule{{path, Read}}}); err == nil {
			t.Errorf("%q: profile made", path)
		}
	}
}
