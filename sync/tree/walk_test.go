package tree

import (
	"io/fs"
	"slices"
	"testing"

	"github.com/polecat-sidecar/sidecar/sync"
	"github.com/polecat-sidecar/sidecar/sync/internal/fixture"
)

// TestWalk: the walk visits the directories leading to an include and what
// the policy lets cross under it, sorted, each once; never a blacklisted
// path, nor what a symlink leads to; a name that is not UTF-8 is skipped.
func TestWalk(t *testing.T) {
	dir := t.TempDir()
	fixture.WriteTree(t, dir, map[string]string{
		".claude/settings.json":    "{}",
		".claude/credentials.json": "secret",
		"results/b":                "b",
		"results/a/x":              "x",
		"results/.ssh/id_rsa":      "key",
		"results/link":             "->../other",
		"results/caf\xe9":          "latin-1",
		"other/y":                  "not included",
	})
	tr, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	var visited, skipped []string
	p := sync.Policy{Include: []string{".claude/settings.json", "results"}}
	err = tr.Walk(p, func(rel string, fi fs.FileInfo) error {
		visited = append(visited, rel)
		return nil
	}, func(rel string) { skipped = append(skipped, rel) })
	if err != nil {
		t.Fatal(err)
	}
	want := []string{".claude", ".claude/settings.json", "results", "results/a", "results/a/x", "results/b", "results/link"}
	if !slices.Equal(visited, want) {
		t.Errorf("visited %q, want %q", visited, want)
	}
	if !slices.Equal(skipped, []string{"results/caf\xe9"}) {
		t.Errorf("skipped %q", skipped)
	}
	var all []string
	if err := tr.WalkAll("results/a", func(rel string, _ fs.FileInfo) { all = append(all, rel) }); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(all, []string{"results/a", "results/a/x"}) {
		t.Errorf("WalkAll: %q", all)
	}
}
