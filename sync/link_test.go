package sync

import (
	"errors"
	"testing"
)

// links is a tree's symlinks, for a view of it.
type links map[string]string

func (l links) view(rel string) (string, bool) {
	t, ok := l[rel]
	return t, ok
}

func TestResolveLink(t *testing.T) {
	cases := []struct {
		name        string
		tree        links
		rel, target string
		to          string // "" when it must leave the root
	}{
		{"sibling", nil, "results/latest", "run-3", "results/run-3"},
		{"up and down", nil, "results/a/b", "../c", "results/c"},
		{"to the root", nil, "results/x", "..", "."},
		{"out by dots", nil, "results/x", "../../etc", ""},
		{"absolute", nil, "results/x", "/etc/passwd", ""},
		{"empty", nil, "results/x", "", ""},
		// The chain: l is a link to results, so l/.. is the root,
		// not results/a/b/c; lexically the target stays inside.
		{"chain out", links{"results/a/b/c/l": "../../.."}, "results/a/b/c/e", "l/../../../../X", ""},
		{"chain lexically fine without the link", nil, "results/a/b/c/e", "l/../../../../X", "results/X"},
		{"chain through a link inside", links{"results/cur": "v2"}, "results/latest", "cur/out", "results/v2/out"},
		{"chain to an absolute link", links{"results/abs": "/home"}, "results/x", "abs/y", ""},
		{"a loop", links{"results/a": "b", "results/b": "a"}, "results/x", "a", ""},
		{"link's own target followed last", links{"results/top": "../.."}, "results/x", "top", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			to, _, ok := resolveLink(c.tree.view, c.rel, c.target)
			if c.to == "" {
				if ok {
					t.Fatalf("%s -> %s resolved to %q, want it refused as leaving the root", c.rel, c.target, to)
				}
				return
			}
			if !ok || to != c.to {
				t.Fatalf("%s -> %s resolved to %q (ok %v), want %q", c.rel, c.target, to, ok, c.to)
			}
		})
	}
}

func TestJudgeLink(t *testing.T) {
	p := Policy{Include: []string{"results", "home"}}
	cases := []struct {
		rel, target string
		tree        links
		ok          bool
	}{
		{"results/latest", "run-3", nil, true},
		{"results/a/b", "../c", nil, true},
		{"results/x", "../home/notes", nil, true},
		{"results/x", "../.ssh", nil, false},
		{"results/x", "../home/.ssh", nil, false},
		{"results/x", "../../etc", nil, false},
		{"results/x", "/etc/passwd", nil, false},
		{"results/x", "../other", nil, false},
		{"results/x", "", nil, false},
		{"results/x", "h/notes", links{"results/h": "../home"}, true},
		{"results/x", "h/.ssh", links{"results/h": "../home"}, false},
		{"results/a/b/c/e", "l/../../../../X", links{"results/a/b/c/l": "../../.."}, false},
	}
	for _, c := range cases {
		err := p.JudgeLink(c.tree.view, c.rel, c.target)
		if (err == nil) != c.ok {
			t.Errorf("JudgeLink(%q -> %q) = %v, want ok %v", c.rel, c.target, err, c.ok)
		}
		var le *LinkError
		if err != nil && !errors.As(err, &le) {
			t.Errorf("JudgeLink(%q -> %q): %T, want a *LinkError", c.rel, c.target, err)
		}
	}
}
