package sync

import (
	"errors"
	"os"
	"path/filepath"
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
		err := p.judgeLink(c.tree.view, c.rel, c.target)
		if (err == nil) != c.ok {
			t.Errorf("judgeLink(%q -> %q) = %v, want ok %v", c.rel, c.target, err, c.ok)
		}
		var le *LinkError
		if err != nil && !errors.As(err, &le) {
			t.Errorf("judgeLink(%q -> %q): %T, want a *LinkError", c.rel, c.target, err)
		}
	}
}

// TestEscapingLinks: links already on a host root that lead out, through a
// chain, are listed (hostd sync status) and left out of what Pack sends.
func TestEscapingLinks(t *testing.T) {
	root := t.TempDir()
	p := Policy{Include: []string{"results"}}
	writeTree(t, root, map[string]string{"results/a/b/c/keep.txt": "x", "results/ok.txt": "ok"})
	for link, target := range map[string]string{
		"results/a/b/c/l":  "../../..",
		"results/a/b/c/e":  "l/../../../../X",
		"results/fine":     "ok.txt",
		"results/absolute": "/etc",
	} {
		if err := os.Symlink(target, filepath.Join(root, link)); err != nil {
			t.Fatal(err)
		}
	}
	bad, err := EscapingLinks(root, p)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, le := range bad {
		got[le.Path] = true
	}
	if !got["results/a/b/c/e"] || !got["results/absolute"] || got["results/fine"] || len(bad) != 2 {
		t.Errorf("escaping links %v, want results/a/b/c/e and results/absolute", bad)
	}
	m, skipped, err := Pack(t.Context(), root, p, discard{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range m.Entries {
		if e.Path == "results/a/b/c/e" || e.Path == "results/absolute" {
			t.Errorf("Pack sent the escaping link %s", e.Path)
		}
	}
	if len(skipped) != 2 {
		t.Errorf("Pack skipped %v, want the two escaping links", skipped)
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
