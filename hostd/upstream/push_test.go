package upstream

import (
	"maps"
	"testing"
)

func TestPorcelainResults(t *testing.T) {
	cases := []struct {
		name, out string
		want      map[string]bool
	}{
		{"mixed", "To /srv/origin.git\n*\trefs/heads/polecat/a:refs/heads/polecat/a\t[new branch]\n+\trefs/heads/polecat/b:refs/heads/polecat/b\t1a2b...3c4d (forced update)\n-\t:refs/heads/polecat/c\t[deleted]\n=\trefs/heads/polecat/d:refs/heads/polecat/d\t[up to date]\n!\trefs/heads/polecat/e:refs/heads/polecat/e\t[rejected] (fetch first)\nDone\n",
			map[string]bool{"refs/heads/polecat/a": true, "refs/heads/polecat/b": true, "refs/heads/polecat/c": true, "refs/heads/polecat/d": true, "refs/heads/polecat/e": false}},
		{"total failure", "fatal: 'origin' does not appear to be a git repository\n", map[string]bool{}},
		{"junk", "\t\t\n!!\ta\tb\n*\tno-colon\tx\n", map[string]bool{}},
	}
	for _, c := range cases {
		if got := porcelainResults(c.out); !maps.Equal(got, c.want) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
