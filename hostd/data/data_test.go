package data

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/polecat-sidecar/sidecar/internal/settings/settingstest"
	datasync "github.com/polecat-sidecar/sidecar/sync"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// TestSummarise: a result lists the changes that fit half the wire's
// limit and counts the rest, so a merge of many changes still reads as
// done; whatever the paths, the result fits.
func TestSummarise(t *testing.T) {
	many := func(n, pathLen int) []datasync.Change {
		out := make([]datasync.Change, n)
		for i := range out {
			out[i] = datasync.Change{Path: strings.Repeat("p", pathLen), Action: datasync.Conflicted, Copy: strings.Repeat("c", pathLen)}
		}
		return out
	}
	cases := []struct {
		name     string
		changes  []datasync.Change
		wantAll  bool
		wantMore bool
	}{
		{"none", nil, true, false},
		{"a few", many(3, 20), true, false},
		{"20,000 conflicts", many(20_000, 40), false, true},
		{"long paths", many(1_000, 4096), false, true},
		{"paths of control characters, escaped six-fold", func() []datasync.Change {
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

// TestConfig: New takes zero fields as the defaults and refuses a field
// out of its range, a malformed policy or a relative root, naming it.
func TestConfig(t *testing.T) {
	valid := func() Config {
		c := DefaultConfig()
		c.Town, c.Dir, c.Logger = t.TempDir(), t.TempDir(), slog.New(slog.DiscardHandler)
		return c
	}
	settingstest.Run(t, valid, func(c Config) error { _, err := New(c, nil); return err }, []settingstest.Case[Config]{
		{Name: "defaults"},
		{Name: "zero is the default", Set: func(c *Config) { *c = Config{Town: c.Town, Dir: c.Dir} }},
		{Name: "hold off", Set: func(c *Config) { c.MaxDeleteShare = 1 }},
		{Name: "absolute root", Set: func(c *Config) { c.Roots = map[string]string{"gastown": "/data/{name}"} }},
		{Name: "no dir", Set: func(c *Config) { c.Dir = "" }, Want: "data: Dir is required"},
		{Name: "negative bytes", Set: func(c *Config) { c.MaxBytes = -1 }, Want: "MaxBytes is -1: it must be above 0"},
		{Name: "negative files", Set: func(c *Config) { c.MaxFiles = -1 }, Want: "MaxFiles is -1: it must be above 0"},
		{Name: "negative file size", Set: func(c *Config) { c.MaxFileSize = -1 }, Want: "MaxFileSize is -1: it must be above 0"},
		{Name: "negative ratio", Set: func(c *Config) { c.MaxRatio = -1 }, Want: "MaxRatio is -1: it must be above 0"},
		{Name: "negative manifest", Set: func(c *Config) { c.MaxManifestBytes = -1 }, Want: "MaxManifestBytes is -1: it must be above 0"},
		{Name: "negative storage", Set: func(c *Config) { c.MaxStoredBytes = -1 }, Want: "MaxStoredBytes is -1: it must be above 0"},
		{Name: "negative conflicts", Set: func(c *Config) { c.MaxConflicts = -1 }, Want: "MaxConflicts is -1: it must be above 0"},
		{Name: "share below 0", Set: func(c *Config) { c.MaxDeleteShare = -0.1 }, Want: "MaxDeleteShare is -0.1: it must be from 0 to 1"},
		{Name: "share above 1", Set: func(c *Config) { c.MaxDeleteShare = 1.5 }, Want: "MaxDeleteShare is 1.5: it must be from 0 to 1"},
		{Name: "negative merges", Set: func(c *Config) { c.MergeProcesses = -1 }, Want: "MergeProcesses is -1: it must be above 0"},
		{Name: "negative timeout", Set: func(c *Config) { c.Timeout = -time.Second }, Want: "Timeout is -1s: it must be above 0"},
		{Name: "negative transfers", Set: func(c *Config) { c.AgentTransfersPerHour = -1 }, Want: "AgentTransfersPerHour is -1: it must be above 0"},
		{Name: "malformed include", Set: func(c *Config) { c.Include = []string{"../up"} }, Want: "include \"../up\""},
		{Name: "relative root", Set: func(c *Config) { c.Roots = map[string]string{"gastown": "data/{name}"} }, Want: "Roots: rig gastown: \"data/{name}\" must be an absolute path"},
	})
}

// TestArchiveLimits: an archive may write no more than the storage budget,
// even when MaxBytes is larger.
func TestArchiveLimits(t *testing.T) {
	tests := []struct {
		name            string
		maxBytes, store int
		want            int64
	}{
		{"bytes below the budget", 1 << 20, 2 << 20, 1 << 20},
		{"bytes above the budget", 4 << 20, 2 << 20, 2 << 20},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Config{MaxBytes: tt.maxBytes, MaxStoredBytes: int64(tt.store)}
			if got := c.limits().MaxBytes; got != tt.want {
				t.Fatalf("limits().MaxBytes = %d, want %d", got, tt.want)
			}
		})
	}
}
