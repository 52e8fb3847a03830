package tree

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRemoveStaging: a sender's leftover staging directories go, another
// sender's whose name starts alike (nux, nux-2) stay, and a missing root
// has none.
func TestRemoveStaging(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "root")
	tr, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	var names []string
	for _, who := range []string{"nux", "nux", "nux-2"} {
		name, err := tr.Staging(who)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(name, ".sidecar-incoming-"+who+".") {
			t.Errorf("staging directory %q for %s", name, who)
		}
		names = append(names, name)
	}
	if err := tr.WriteFile(names[0]+"/f", []byte("partial"), 0o600); err != nil {
		t.Fatal(err)
	}
	if n, err := RemoveStaging(dir, "nux"); n != 2 || err != nil {
		t.Fatalf("removed %d, %v; want nux's 2", n, err)
	}
	left, _ := os.ReadDir(dir)
	if len(left) != 1 || left[0].Name() != names[2] {
		t.Errorf("left %v, want only %s", left, names[2])
	}
	if n, err := RemoveStaging(filepath.Join(dir, "missing"), "nux"); n != 0 || err != nil {
		t.Errorf("a missing root: %d, %v", n, err)
	}
}
