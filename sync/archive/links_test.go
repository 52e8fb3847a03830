package archive

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/polecat-sidecar/sidecar/sync"
	"github.com/polecat-sidecar/sidecar/sync/internal/fixture"
)

// TestEscapingLinks: links already on a host root that lead out, through a
// chain, are listed (hostd sync status) and left out of what Pack sends.
func TestEscapingLinks(t *testing.T) {
	root := t.TempDir()
	p := sync.Policy{Include: []string{"results"}}
	fixture.WriteTree(t, root, map[string]string{"results/a/b/c/keep.txt": "x", "results/ok.txt": "ok"})
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
