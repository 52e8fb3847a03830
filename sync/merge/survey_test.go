package merge

import (
	"strings"
	"testing"

	"github.com/polecat-sidecar/sidecar/sync"
	"github.com/polecat-sidecar/sidecar/sync/internal/fixture"
)

// TestSurvey: the budget counts the paths that cross and the conflict
// copies beside an included file or directory, which do not cross
// themselves, every entry at least entryCost; not the rest of the root.
func TestSurvey(t *testing.T) {
	root := t.TempDir()
	p := sync.Policy{Include: []string{"CLAUDE.md", "results"}}
	fixture.WriteTree(t, root, map[string]string{
		"CLAUDE.md":                       strings.Repeat("c", 10),
		"CLAUDE.md.conflict-nux-20261123": strings.Repeat("x", 100),
		"results/r":                       strings.Repeat("r", 1000),
		"results/r.conflict-nux-20261123": strings.Repeat("y", 10000),
		"results/link":                    "->r",
		"results.conflict-nux-1/in":       strings.Repeat("z", 100000),
		"worktree/big":                    strings.Repeat("w", 1000000),
	})
	sv, err := SurveyRoot(root, p)
	if err != nil {
		t.Fatal(err)
	}
	// 8 entries: CLAUDE.md, its copy, results, r, r's copy, link, the
	// copied directory and what is in it.
	if want := int64(111110 + 8*entryCost); sv.Bytes != want {
		t.Errorf("surveyed %d bytes, want %d (copies counted, the worktree not)", sv.Bytes, want)
	}
	if len(sv.Links) != 1 || sv.Links[0] != "results/link" {
		t.Errorf("links %v, want [results/link]", sv.Links)
	}
}
