package merge

import (
	"io/fs"
	"path"
	"testing"

	"github.com/polecat-sidecar/sidecar/sync"
	"github.com/polecat-sidecar/sidecar/sync/internal/fixture"
	"github.com/polecat-sidecar/sidecar/sync/tree"
)

// TestAfterView: the tree as a merge will leave it holds, at every path of
// a small tree and under it, the link the path-keyed view judgeLinks had
// before said it would, and judges every link there as that view did
// (fixture.JudgeByPath): the plan's entry where it decided one (a removed
// link, a replaced one, a new one), nothing of the host's under a
// directory it redirects or makes, and the host's tree elsewhere.
func TestAfterView(t *testing.T) {
	dir := t.TempDir()
	fixture.WriteTree(t, dir, map[string]string{
		"r/a/l":   "->../b",      // removed by the plan
		"r/b/l":   "->../../x",   // replaced by the plan
		"r/d/l":   "->..",        // under a directory the plan redirects
		"r/e/l":   "->../../../", // under a directory the plan makes
		"r/l":     "->d/l/../a",  // the host's, kept
		"r/a/d/f": "f",
		"r/f":     "f",
	})
	tr, err := tree.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	link := func(rel, target string) *sync.Entry {
		return &sync.Entry{Path: rel, Type: sync.TypeSymlink, Target: target}
	}
	pl := &planner{Plan: &Plan{t: tr}, aboves: map[string]above{},
		final: map[string]*sync.Entry{
			"r/a/l":   nil,
			"r/b/l":   link("r/b/l", "../a"),
			"r/n":     link("r/n", "d/l/../../e"),
			"r/c/l":   link("r/c/l", "../../.."),
			"r/a/d/f": {Path: "r/a/d/f", Type: sync.TypeFile},
			"r/f":     link("r/f", "b/l/d"),
		},
		redirect: map[string]string{"r/d": "r/c"},
		fresh:    map[string]bool{"r/e": true},
	}
	now := tr.View()
	defer now.Close()
	after := pl.afterView(now)
	onDisk := func(rel string) (string, bool) {
		fi, err := tr.Lstat(rel)
		if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			return "", false
		}
		target, err := tr.Readlink(rel)
		return target, err == nil
	}
	byPath := func(rel string) (string, bool) { // as judgeLinks had it
		if e, ok := pl.final[rel]; ok {
			if e != nil && e.Type == sync.TypeSymlink {
				return e.Target, true
			}
			return "", false
		}
		if _, ok := pl.redirected(rel); ok || pl.underFresh(rel) {
			return "", false
		}
		return onDisk(rel)
	}
	names := []string{"r", "a", "b", "c", "d", "e", "f", "l", "n"}
	paths := []string{}
	for _, a := range names {
		paths = append(paths, a)
		for _, b := range names {
			paths = append(paths, a+"/"+b)
			for _, c := range names {
				paths = append(paths, a+"/"+b+"/"+c, a+"/"+b+"/"+c+"/l")
			}
		}
	}
	var targets []string
	for _, rel := range paths {
		target, isLink := linkAt(after, rel)
		wantTarget, want := byPath(rel)
		if isLink != want || target != wantTarget {
			t.Errorf("%s: link %v to %q, want %v to %q", rel, isLink, target, want, wantTarget)
		}
		if want {
			targets = append(targets, wantTarget)
		}
	}
	if len(targets) != 5 {
		t.Errorf("%d links in the tree after the merge, want 5: %q", len(targets), targets)
	}
	p := sync.Policy{Include: []string{"r"}}
	for _, rel := range paths {
		for _, target := range targets {
			got := errString(p.JudgeLink(after, path.Join(rel, "x"), target))
			if want := errString(fixture.JudgeByPath(p, byPath, path.Join(rel, "x"), target)); got != want {
				t.Errorf("%s/x -> %s: %q, by path %q", rel, target, got, want)
			}
		}
	}
}

// errString is err's message, "" for none.
func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
