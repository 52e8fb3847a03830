package sync

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// links is a tree's symlinks, for a view of it.
type links map[string]string

// view is the tree of l's links as a manifest would describe it.
func (l links) view() LinkView {
	idx := map[string]*Entry{}
	for rel, target := range l {
		idx[rel] = &Entry{Path: rel, Type: TypeSymlink, Target: target}
	}
	return ManifestView(idx)
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
			to, _, ok := resolveLink(c.tree.view(), c.rel, c.target)
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
		err := p.JudgeLink(c.tree.view(), c.rel, c.target)
		if (err == nil) != c.ok {
			t.Errorf("JudgeLink(%q -> %q) = %v, want ok %v", c.rel, c.target, err, c.ok)
		}
		var le *LinkError
		if err != nil && !errors.As(err, &le) {
			t.Errorf("JudgeLink(%q -> %q): %T, want a *LinkError", c.rel, c.target, err)
		}
	}
}

// manifestOf is the tree entries describe, as a manifest's index:
// "path/" a directory, "path -> target" a symlink.
func manifestOf(entries ...string) map[string]*Entry {
	idx := map[string]*Entry{}
	for _, e := range entries {
		if rel, target, isLink := strings.Cut(e, " -> "); isLink {
			idx[rel] = &Entry{Path: rel, Type: TypeSymlink, Target: target}
			continue
		}
		rel := strings.TrimSuffix(e, "/")
		idx[rel] = &Entry{Path: rel, Type: TypeDir}
	}
	return idx
}

// dirsTo is the entries of dir and each directory above it.
func dirsTo(dir string) []string {
	var out []string
	for i := range dir {
		if dir[i] == '/' {
			out = append(out, dir[:i]+"/")
		}
	}
	return append(out, dir+"/")
}

// counted is a view with each lookup's cost added to *asked: the bytes
// of the name it is asked about, which the lookup hashes.
type counted struct {
	LinkView
	asked *int
}

func (c counted) Child(name string) (LinkView, string, bool) {
	*c.asked += len(name)
	dir, target, isLink := c.LinkView.Child(name)
	if dir != nil {
		dir = counted{dir, c.asked}
	}
	return dir, target, isLink
}

// TestResolveLinkCost: what resolving a symlink asks of its view grows
// with the length of its target and of the targets it follows, not with
// their square: every lookup is counted by the bytes it is asked about.
// Looking every prefix of the walk up again by its whole path, a
// 4095-byte d/d/.../d asked about 4 MiB.
func TestResolveLinkCost(t *testing.T) {
	deep := "results" + strings.Repeat("/d", 255)
	downUp := strings.Repeat("d/", 255) + strings.Repeat("../", 255)
	wide := "results" + strings.Repeat("/"+strings.Repeat("n", 255), 15)
	chain := dirsTo(deep)
	for i := range 39 {
		chain = append(chain, fmt.Sprintf("results/a%02d -> %sa%02d", i, downUp, i+1))
	}
	chain = append(chain, "results/a39/")
	cases := []struct {
		name        string
		entries     []string
		rel, target string
	}{
		{"down into nothing", []string{"results/"}, "results/l", strings.Repeat("d/", 2047) + "d"},
		{"down and up directories", dirsTo(deep), "results/l", strings.Repeat(downUp, 3) + "d"},
		{"to and fro, 15 names of 255 bytes down", dirsTo(wide + "/x"), wide + "/l", strings.Repeat("x/../", 800)},
		{"deep, through 39 links each a long way", chain, deep + "/l", strings.Repeat("../", 255) + "a00"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			idx := manifestOf(c.entries...)
			limit := len(c.rel) + len(c.target)
			for _, e := range idx {
				limit += len(e.Target) // each followed once at most
			}
			asked := 0
			if _, _, ok := resolveLink(counted{ManifestView(idx), &asked}, c.rel, c.target); !ok {
				t.Fatalf("%s -> %.40s... refused", c.rel, c.target)
			}
			t.Logf("asked about %d bytes, limit %d", asked, limit)
			if asked > limit {
				t.Errorf("resolving a %d-byte target asked its view about %d bytes, over %d (the link's path and every target walked)", len(c.target), asked, limit)
			}
		})
	}
}
