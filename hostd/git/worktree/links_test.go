package worktree

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// viewOf is the linkView of a tree given as entries (see fill).
func viewOf(entries ...string) *linkView {
	v := newLinkView()
	fill(v, entries)
	return v
}

// linkJudge is a resolver of a tree's links: linkView, or joiningView,
// which it replaced.
type linkJudge interface {
	addPath(folded string)
	addLink(path, folded string, target []byte)
	escapes(path string) string
}

// fill gives v a tree's entries, "path" a file, "path -> target" a
// symlink, "path/" a gitlink, as the guard does: every path, then every
// link's target. It returns the links' paths.
func fill(v linkJudge, entries []string) (links []string) {
	var targets []string
	for _, e := range entries {
		path, target, isLink := strings.Cut(e, " -> ")
		v.addPath(foldPath(path))
		if isLink {
			links, targets = append(links, path), append(targets, target)
		}
	}
	for i, l := range links {
		v.addLink(l, foldPath(l), []byte(targets[i]))
	}
	return links
}

// TestLinkEscapes judges links of small trees: inside, through chains,
// out by "..", absolute, through what the tree holds no directory at,
// loops, targets cut at NUL as symlink(2) cuts them, names a
// case-insensitive host confuses, and the step budget.
func TestLinkEscapes(t *testing.T) {
	for _, c := range linkCases {
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

// linkCases are TestLinkEscapes' trees, and the seeds of
// FuzzLinkEscapesAsJoining.
var linkCases = []struct {
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
	{"up from a name folding to nothing", []string{"\u200c/f", "l -> \u200c/.."}, "l", `goes up out of ""`},
	{"loop", []string{"a -> b", "b -> a"}, "a", "more than 40 links"},
	{"self", []string{"a -> a/x"}, "a", "more than 40 links"},
	{"cut at NUL", []string{"l -> ..\x00/inside"}, "l", "leaves the worktree"},
	{"inside before NUL", []string{"l -> x\x00/../../.."}, "l", ""},
	{"too long", []string{"l -> " + strings.Repeat("a/", maxLinkTarget/2+1)}, "l", "longer than 4096 bytes"},
	{"case-insensitive parent", []string{"sub/f", "l -> SUB/../.."}, "l", "leaves the worktree"},
	{"link and directory alike", []string{"x/f", "X -> d/e", "d/e/g", "l -> X/../.."}, "l", `"X" is a link and a directory`},
	{"two links alike", []string{"A -> d", "a -> e", "d/f", "e/f", "l -> a"}, "l", "two links"},
}

// TestLinkEscapesWork judges links whose targets are as long as a host
// takes (4095 bytes, up to 2,048 names), reaching 2,048 directories deep,
// through nothing, up and out, and along a chain of 40 such links, and
// requires the work of each linear in the resolution steps it takes (the
// names of its targets, each link followed one of them) and its own
// path's names, however deep it reaches. The work is counted as the bytes
// escapes allocates: a resolver that builds the path it stands in at each
// name (as one that joined it did: 4 MiB for one 2,048-name target)
// allocates quadratically.
func TestLinkEscapesWork(t *testing.T) {
	deep := strings.Repeat("d/", 2047) + "d" // 4095 bytes
	chain := make([]string, 40)
	for i := range chain {
		// Down 800 directories and back up, on to the next link.
		chain[i] = fmt.Sprintf("l%02d -> %s%sl%02d", i, strings.Repeat("d/", 800), strings.Repeat("../", 800), i+1)
	}
	chain[len(chain)-1] = "l39 -> " + deep
	cases := []struct {
		name    string
		entries []string
		link    string
		want    string // "" inside, else part of why
	}{
		{"deep through directories", []string{deep + "/f", "l -> " + deep}, "l", ""},
		{"deep through nothing", []string{"l -> " + strings.Repeat("n/", 2047) + "n"}, "l", ""},
		{"in another case", []string{deep + "/f", "l -> " + strings.ToUpper(deep)}, "l", ""},
		{"down and out", []string{deep + "/f", "l -> " + strings.Repeat("d/", 800) + strings.Repeat("../", 801)}, "l", "leaves the worktree"},
		{"up out of nothing", []string{"l -> " + strings.Repeat("n/", 2046) + ".."}, "l", "goes up out of"},
		{"from deep", []string{deep + "/l -> " + strings.Repeat("n/", 2047) + "n"}, deep + "/l", ""},
		{"a chain of 40", append([]string{deep + "/f"}, chain...), "l00", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := viewOf(c.entries...)
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			got := v.escapes(c.link)
			runtime.ReadMemStats(&after)
			if c.want == "" && got != "" || c.want != "" && !strings.Contains(got, c.want) {
				t.Fatalf("%s is judged %q, want %q", c.link, got, c.want)
			}
			steps := maxLinkSteps - v.steps
			names := strings.Count(c.link, "/") + 1
			bytes := after.TotalAlloc - before.TotalAlloc
			t.Logf("%d steps from %d names deep: %d bytes", steps, names, bytes)
			if limit := uint64(128*(steps+names) + 4096); bytes > limit {
				t.Errorf("%d steps from %d names deep allocated %d bytes, over %d", steps, names, bytes, limit)
			}
		})
	}
}

// BenchmarkLinkEscapesBudget judges, with linkView and with joiningView,
// the resolver it replaced, a tree of as many links as the step budget
// takes, each with a 4095-byte target 2,048 directories deep.
func BenchmarkLinkEscapesBudget(b *testing.B) {
	deep := strings.Repeat("d/", 2047) + "d"
	entries := []string{deep + "/f"}
	for i := range maxLinkSteps / 2048 {
		entries = append(entries, fmt.Sprintf("l%04d -> %s", i, deep))
	}
	for _, r := range []struct {
		name string
		view func() linkJudge
	}{{"tree", func() linkJudge { return newLinkView() }}, {"joining", func() linkJudge { return newJoiningView() }}} {
		b.Run(r.name, func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				v := r.view()
				links := fill(v, entries)
				b.StartTimer()
				for _, l := range links {
					if why := v.escapes(l); why != "" {
						b.Fatalf("%s is judged %q", l, why)
					}
				}
			}
		})
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

// FuzzLinkEscapesAsJoining judges every link of a fuzzed tree (entries
// as fill takes them, one a line) with linkView and with joiningView, the
// resolver it replaced, under a fuzzed step budget, in the same order:
// each judgement, and the budget left after it, must be the same.
func FuzzLinkEscapesAsJoining(f *testing.F) {
	for _, c := range linkCases {
		f.Add(strings.Join(c.entries, "\n"), uint16(maxLinkHops*8))
	}
	f.Add("l -> "+strings.Repeat("./", 100), uint16(50))
	f.Add("a -> b/../c/../..\nb -> c\nc/d -> ../b\nC/e/f", uint16(3))
	f.Add("\u212a/x\nk -> K/..\nl -> \u212a\u200c/../..", uint16(100))
	f.Fuzz(func(t *testing.T, tree string, steps uint16) {
		entries := strings.Split(tree, "\n")
		v, old := newLinkView(), newJoiningView()
		v.steps, old.steps = int(steps), int(steps)
		links := fill(v, entries)
		fill(old, entries)
		for _, l := range links {
			got, want := v.escapes(l), old.escapes(l)
			if got != want || v.steps != old.steps {
				t.Fatalf("%q in %q: judged %q with %d steps left, the joining resolver %q with %d", l, entries, got, v.steps, want, old.steps)
			}
		}
	})
}

// joiningView is the resolver linkView replaced, kept to judge it by: it
// keeps the tree's directories and links by folded path, and resolves a
// link by joining the whole path it stands in at every name, which makes
// judging a link quadratic in its target's length.
type joiningView struct {
	dirs  map[string]bool
	links map[string]linkEntry
	steps int
}

func newJoiningView() *joiningView {
	return &joiningView{dirs: map[string]bool{}, links: map[string]linkEntry{}, steps: maxLinkSteps}
}

func (v *joiningView) addPath(folded string) {
	for i := strings.LastIndexByte(folded, '/'); i > 0; i = strings.LastIndexByte(folded[:i], '/') {
		if v.dirs[folded[:i]] {
			break // and so are its parents
		}
		v.dirs[folded[:i]] = true
		if l, ok := v.links[folded[:i]]; ok {
			l.ambiguous = true
			v.links[folded[:i]] = l
		}
	}
}

func (v *joiningView) addLink(path, folded string, target []byte) {
	if i := strings.IndexByte(string(target), 0); i >= 0 {
		target = target[:i]
	}
	v.addPath(folded)
	l, dup := v.links[folded]
	switch {
	case !dup:
		l = linkEntry{path: path, target: string(target), ambiguous: v.dirs[folded]}
	case l.target != string(target):
		l.ambiguous = true
	}
	v.links[folded] = l
}

func (v *joiningView) escapes(path string) string {
	f := foldPath(path)
	start := v.links[f]
	through := func(via linkEntry) string {
		if via == start {
			return ""
		}
		return " through " + quote(via.path)
	}
	dir := strings.Split(f, "/")
	dir = dir[:len(dir)-1]
	var rest []string
	for via, hops := start, 0; ; hops++ {
		switch {
		case hops >= maxLinkHops:
			return fmt.Sprintf("it goes through more than %d links", maxLinkHops)
		case via.ambiguous:
			return fmt.Sprintf("%s is a link and a directory, or two links, on a host whose names ignore case or Unicode form", quote(via.path))
		case len(via.target) > maxLinkTarget:
			return fmt.Sprintf("the target of %s is longer than %d bytes", quote(via.path), maxLinkTarget)
		case strings.HasPrefix(via.target, "/"):
			return "it reaches an absolute path" + through(via)
		}
		rest = append(strings.Split(via.target, "/"), rest...)
		followed := false
		for len(rest) > 0 && !followed {
			if v.steps--; v.steps < 0 {
				return "the tree's links take too many steps to judge"
			}
			c := rest[0]
			rest = rest[1:]
			switch c {
			case "", ".":
			case "..":
				if len(dir) == 0 {
					return "it leaves the worktree" + through(via)
				}
				if !v.dirs[strings.Join(dir, "/")] {
					return fmt.Sprintf("it goes up out of %s, which the tree holds no directory at", quote(strings.Join(dir, "/")))
				}
				dir = dir[:len(dir)-1]
			default:
				dir = append(dir, foldPath(c))
				if l, ok := v.links[strings.Join(dir, "/")]; ok {
					dir, via, followed = dir[:len(dir)-1], l, true
				}
			}
		}
		if !followed {
			return ""
		}
	}
}
