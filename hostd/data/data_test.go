package data

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/polecat-sidecar/sidecar/sync/merge"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// TestSummarise: a result lists the changes that fit half the wire's
// limit and counts the rest, so a merge of many changes still reads as
// done; whatever the paths, the result fits.
func TestSummarise(t *testing.T) {
	many := func(n, pathLen int) []merge.Change {
		out := make([]merge.Change, n)
		for i := range out {
			out[i] = merge.Change{Path: strings.Repeat("p", pathLen), Action: merge.Conflicted, Copy: strings.Repeat("c", pathLen)}
		}
		return out
	}
	cases := []struct {
		name     string
		changes  []merge.Change
		wantAll  bool
		wantMore bool
	}{
		{"none", nil, true, false},
		{"a few", many(3, 20), true, false},
		{"20,000 conflicts", many(20_000, 40), false, true},
		{"long paths", many(1_000, 4096), false, true},
		{"paths of control characters, escaped six-fold", func() []merge.Change {
			out := many(1_000, 4096)
			for i := range out {
				out[i].Path = strings.Repeat("\x01", 4096)
			}
			return out
		}(), false, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			listed, more := summarise(c.changes)
			if len(listed)+more != len(c.changes) {
				t.Fatalf("%d listed and %d more, of %d", len(listed), more, len(c.changes))
			}
			if (more == 0) != c.wantAll || (more > 0) != c.wantMore {
				t.Fatalf("%d listed, %d more", len(listed), more)
			}
			var b strings.Builder
			if err := wire.WriteSyncResult(&b, wire.SyncResult{Changes: listed, More: more}); err != nil {
				t.Fatal(err)
			}
			if b.Len() > wire.MaxSyncResult {
				t.Fatalf("the result takes %d bytes, over the wire's %d", b.Len(), wire.MaxSyncResult)
			}
			if _, err := wire.ReadSyncResult(strings.NewReader(b.String())); err != nil {
				t.Fatalf("the summarised result does not read back: %v", err)
			}
		})
	}
}

// TestLeftoversRemovedAtStart: what a transfer cut short by a killed hostd
// left (unfinished base contents, a staging directory in the polecat's
// data root) is removed when hostd starts; the polecat's data stays.
func TestLeftoversRemovedAtStart(t *testing.T) {
	town, dir := t.TempDir(), t.TempDir()
	root := filepath.Join(town, "gastown", "polecats", "furiosa")
	files := map[string]string{
		filepath.Join(dir, "gastown", "furiosa", "base.json"):                  "{}",
		filepath.Join(dir, "gastown", "furiosa", "base-new-123.tar"):           "half",
		filepath.Join(root, "results", "report.txt"):                           "report",
		filepath.Join(root, ".sidecar-incoming-furiosa.0a1b2c", "tree", "x"):   "staged",
		filepath.Join(root, ".sidecar-incoming-furiosa-2.0a1b2c", "tree", "x"): "another polecat's, mid-transfer",
	}
	for p, content := range files {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := New(Config{Town: town, Dir: dir, Logger: slog.New(slog.DiscardHandler)}, nil); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]bool{
		filepath.Join(dir, "gastown", "furiosa", "base-new-123.tar"):           false,
		filepath.Join(root, ".sidecar-incoming-furiosa.0a1b2c"):                false,
		filepath.Join(dir, "gastown", "furiosa", "base.json"):                  true,
		filepath.Join(root, "results", "report.txt"):                           true,
		filepath.Join(root, ".sidecar-incoming-furiosa-2.0a1b2c", "tree", "x"): true,
	} {
		if _, err := os.Stat(p); (err == nil) != want {
			t.Errorf("%s: present %v, want %v", p, err == nil, want)
		}
	}
}
