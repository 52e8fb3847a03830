package git

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// viewOf is the linkView of a tree given as entries: "path" a file,
// "path -> target" a symlink, "path/" a gitlink.
func viewOf(entries ...string) *linkView {
	v := newLinkView()
	var links [][2]string
	for _, e := range entries {
		path, target, isLink := strings.Cut(e, " -> ")
		switch {
		case isLink:
			v.addPath(foldPath(path))
			links = append(links, [2]string{path, target})
		default:
			v.addPath(foldPath(path))
		}
	}
	for _, l := range links {
		v.addLink(l[0], foldPath(l[0]), []byte(l[1]))
	}
	return v
}

// TestLinkEscapes judges links of small trees: inside, through chains,
// out by "..", absolute, through what the tree holds no directory at,
// loops, targets cut at NUL as symlink(2) cuts them, names a
// case-insensitive host confuses, and the step budget.
func TestLinkEscapes(t *testing.T) {
	long := strings.Repeat("a/", maxLinkTarget/2+1)
	cases := []struct {
		name    string
		entries []string
		link    string
		want    string // "" inside, else part of why
	}{
		{"sibling", []string{"README", "l -> README"}, "l", ""},
		{"up and back", []string{"README", "d/l -> ../README"}, "d/l", ""},
		{"deep", []string{"README", "a/b/c/l -> ../../../README"}, "a/b/c/l", ""},
		{"dangling inside", []string{"l -> nothere"}, "l", ""},
		{"dot", []string{"l -> ."}, "l", ""},
		{"through a directory", []string{"d/f", "l -> d/../d/f"}, "l", ""},
		{"gitlink is a directory", []string{"m/", "l -> m/.."}, "l", ""},
		{"chain inside", []string{"c/f", "a -> b/..", "b -> c"}, "a", ""},
		{"parent", []string{"l -> .."}, "l", "leaves the worktree"},
		{"deep out", []string{"a/b/c/l -> ../../../.."}, "a/b/c/l", "leaves the worktree"},
		{"absolute", []string{"l -> /etc/passwd"}, "l", "absolute path"},
		{"chain", []string{"a -> b/..", "b -> ../.."}, "a", `leaves the worktree through "b"`},
		{"chain to absolute", []string{"a -> b/x", "b -> /tmp"}, "a", `absolute path through "b"`},
		{"up from nothing", []string{"l -> nothere/.."}, "l", `goes up out of "nothere"`},
		{"up from a file", []string{"README", "l -> README/.."}, "l", `goes up out of "readme"`},
		{"loop", []string{"a -> b", "b -> a"}, "a", "more than 40 links"},
		{"self", []string{"a -> a/x"}, "a", "more than 40 links"},
		{"cut at NUL", []string{"l -> ..\x00/inside"}, "l", "leaves the worktree"},
		{"inside before NUL", []string{"l -> x\x00/../../.."}, "l", ""},
		{"too long", []string{"l -> " + long}, "l", "longer than 4096 bytes"},
		{"case-insensitive parent", []string{"sub/f", "l -> SUB/../.."}, "l", "leaves the worktree"},
		{"link and directory alike", []string{"x/f", "X -> d/e", "d/e/g", "l -> X/../.."}, "l", `"X" is a link and a directory`},
		{"two links alike", []string{"A -> d", "a -> e", "d/f", "e/f", "l -> a"}, "l", "two links"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := viewOf(c.entries...).escapes(c.link)
			if c.want == "" && got != "" || c.want != "" && !strings.Contains(got, c.want) {
				t.Errorf("%v: %s is judged %q, want %q", c.entries, c.link, got, c.want)
			}
		})
	}
	v := viewOf("l -> " + strings.Repeat("./", 100))
	v.steps = 50
	if got := v.escapes("l"); !strings.Contains(got, "too many steps") {
		t.Errorf("over the step budget: %q", got)
	}
}

// FuzzLinkEscapes makes a tree of three links with the fuzzed targets
// (beside directories d/e and files README and d/e/f) on this machine's
// file system, inside a worktree two directories deep, and checks the
// kernel against the judge: a link judged to resolve inside resolves
// inside, or not at all.
func FuzzLinkEscapes(f *testing.F) {
	for _, seed := range [][3]string{
		{"d/b/..", "../..", "README"},    // a chain out
		{"d/b/x", "e/c", "../../.."},     // two
		{"d/e/c/..", "..", "f"},          // inside
		{"d/b/../..", "e/f", "../b"},     // a loop
		{"/etc", "x\x00/../../..", ".."}, // cut at NUL
		{"D/B/..", "E/C", "../.."},       // in another case
	} {
		f.Add(seed[0], seed[1], seed[2])
	}
	f.Fuzz(func(t *testing.T, a, b, c string) {
		links := [][2]string{{"a", a}, {"d/b", b}, {"d/e/c", c}}
		root, err := filepath.EvalSymlinks(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		wt := filepath.Join(root, "x", "y", "w")
		for _, d := range []string{"d/e", "outside"} {
			_ = os.MkdirAll(filepath.Join(wt, d), 0o755)
		}
		_ = os.WriteFile(filepath.Join(wt, "README"), nil, 0o644)
		_ = os.WriteFile(filepath.Join(wt, "d/e/f"), nil, 0o644)
		v := newLinkView()
		for _, p := range []string{"README", "d/e/f"} {
			v.addPath(foldPath(p))
		}
		for _, l := range links {
			v.addPath(foldPath(l[0]))
		}
		for _, l := range links {
			v.addLink(l[0], foldPath(l[0]), []byte(l[1]))
			target, _, _ := strings.Cut(l[1], "\x00") // as git's checkout makes it
			if target == "" || len(target) > maxLinkTarget {
				t.Skip("no such symlink can be made")
			}
			if err := os.Symlink(target, filepath.Join(wt, l[0])); err != nil {
				t.Skip(err)
			}
		}
		for _, l := range links {
			if why := v.escapes(l[0]); why != "" {
				continue
			}
			got, err := filepath.EvalSymlinks(filepath.Join(wt, l[0]))
			if err != nil {
				continue // fails on the host: nothing followed out
			}
			if got != wt && !strings.HasPrefix(got, wt+string(filepath.Separator)) {
				t.Errorf("%s -> %q (links %q) judged inside resolves to %s, outside %s", l[0], l[1], links, got, wt)
			}
		}
	})
}
