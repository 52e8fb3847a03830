package data

import (
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
