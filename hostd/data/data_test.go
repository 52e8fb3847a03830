package data

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/polecat-sidecar/sidecar/hostd/data/journal"
	"github.com/polecat-sidecar/sidecar/internal/settings/settingstest"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

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
		{Name: "a file larger than an archive", Set: func(c *Config) { c.MaxBytes, c.MaxFileSize = 10, 11 }, Want: "MaxFileSize is 11: it must be at most MaxBytes (10)"},
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
		{Name: "relative root", Set: func(c *Config) { c.Roots = map[string]string{"gastown": "data/{name}"} }, Want: `Roots.gastown is "data/{name}": it must be an absolute path`},
		{Name: "absolute rig root", Set: func(c *Config) { c.RigRoots = map[string]string{"gastown": "/data/shared"} }},
		{Name: "relative rig root", Set: func(c *Config) { c.RigRoots = map[string]string{"gastown": "shared"} }, Want: `RigRoots.gastown is "shared": it must be an absolute path`},
		{Name: "rig root per polecat", Set: func(c *Config) { c.RigRoots = map[string]string{"gastown": "/data/{name}"} }, Want: "(no {name})"},
		{Name: "malformed rig include", Set: func(c *Config) { c.RigInclude = []string{"/etc"} }, Want: "include \"/etc\""},
		{Name: "own path the rig's", Set: func(c *Config) { c.Include = []string{".claude", "results"} }, Want: `RigInclude is ".claude/settings.json": a path is either the polecat's own (it comes back) or its rig's (it never does): it must not meet Include (".claude")`},
		{Name: "rig path the own", Set: func(c *Config) { c.RigInclude = []string{"results/shared"} }, Want: `RigInclude is "results/shared": a path is either the polecat's own (it comes back) or its rig's (it never does): it must not meet Include ("results")`},
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

// TestRoots: a polecat's own root and its rig's come from the settings
// (the rig's name as given, or in lower case) or Gas Town's layout.
func TestRoots(t *testing.T) {
	furiosa := wire.Identity{Rig: "GasTown", Name: "furiosa"}
	tests := []struct {
		name            string
		roots, rigRoots map[string]string
		own, rig        string
	}{
		{"Gas Town's layout", nil, nil, "/town/GasTown/polecats/furiosa", "/town/GasTown/polecats"},
		{"set for the rig", map[string]string{"GasTown": "/d/{name}/x"}, map[string]string{"GasTown": "/d/shared"}, "/d/furiosa/x", "/d/shared"},
		{"set in lower case", map[string]string{"gastown": "/d/{name}"}, map[string]string{"gastown": "/d/rig"}, "/d/furiosa", "/d/rig"},
		{"set for another rig", map[string]string{"other": "/d/{name}"}, map[string]string{"other": "/d/rig"}, "/town/GasTown/polecats/furiosa", "/town/GasTown/polecats"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &Service{cfg: Config{Town: "/town", Roots: tt.roots, RigRoots: tt.rigRoots}}
			if got := s.Root(furiosa); got != tt.own {
				t.Errorf("Root = %s, want %s", got, tt.own)
			}
			if got := s.RigRoot(furiosa); got != tt.rig {
				t.Errorf("RigRoot = %s, want %s", got, tt.rig)
			}
		})
	}
}

// TestMeetsRig: nothing is written into a polecat's root when a path that
// crosses there is, holds, or is under a path of its rig's read-only
// files, by the roots' names or through a symlink.
func TestMeetsRig(t *testing.T) {
	town := t.TempDir()
	writeTree(t, town, map[string]string{"gastown/polecats/.claude/settings.json": "{}", "gastown/polecats/furiosa/CLAUDE.md": "x"})
	if err := os.Symlink(filepath.Join(town, "gastown", "polecats"), filepath.Join(town, "alias")); err != nil {
		t.Fatal(err)
	}
	furiosa := wire.Identity{Rig: "gastown", Name: "furiosa"}
	tests := []struct {
		name     string
		roots    map[string]string
		include  []string
		rigRoots map[string]string
		refused  bool
	}{
		{"Gas Town's layout", nil, nil, nil, false},
		{"a shared own root beside the rig's", map[string]string{"gastown": town + "/gastown/shared"}, nil, nil, false},
		{"own root the rig's", map[string]string{"gastown": town + "/gastown/polecats"}, []string{".claude/settings.json.d"}, nil, false},
		{"own root above the rig's", map[string]string{"gastown": town + "/gastown"}, []string{"polecats"}, nil, true},
		{"own path the rig's file", map[string]string{"gastown": town + "/gastown"}, []string{"polecats/.claude/settings.json"}, nil, true},
		{"own path under the rig's", map[string]string{"gastown": town + "/gastown"}, []string{"polecats/.claude/commands/x.md"}, nil, true},
		{"rig root inside the polecat's results", nil, nil, map[string]string{"gastown": town + "/gastown/polecats/furiosa/results/rig"}, true},
		{"through a symlink", map[string]string{"gastown": town + "/alias"}, []string{".claude"}, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := DefaultConfig()
			c.Town, c.Roots, c.RigRoots = town, tt.roots, tt.rigRoots
			if tt.include != nil {
				c.Include = tt.include
			}
			s := &Service{cfg: c, policy: c.policy(), rigPolicy: c.rigPolicy()}
			err := s.meetsRig(furiosa)
			if (err != nil) != tt.refused {
				t.Fatalf("meetsRig: %v, want refused %v", err, tt.refused)
			}
			if err != nil && !strings.Contains(err.Error(), "read-only") {
				t.Errorf("the refusal does not say why: %v", err)
			}
		})
	}
}

// TestForget: forgetting a polecat waits for its transfer under way, then
// removes its base and delete hold from disk and memory; its data root,
// another polecat's base and the journal stay.
func TestForget(t *testing.T) {
	s, err := New(Config{Town: t.TempDir(), Dir: t.TempDir(), Logger: slog.New(slog.DiscardHandler)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	toast, nux := wire.Identity{Rig: "gastown", Name: "toast"}, wire.Identity{Rig: "gastown", Name: "nux"}
	keepBase(t, s, toast, map[string]string{"results/a.txt": "a"})
	keepBase(t, s, nux, map[string]string{"results/b.txt": "b"})
	if err := s.keepHold(toast, hold{Confirmed: []string{"results/a.txt"}}); err != nil {
		t.Fatal(err)
	}
	writeTree(t, s.Root(toast), map[string]string{"results/a.txt": "a"})
	s.journal(journal.Record{Polecat: toast.String(), Op: "pull"})
	journal := filepath.Join(s.cfg.Dir, "journal.jsonl")

	unlock, err := s.lock(context.Background(), toast) // a transfer under way
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if removed, err := s.Forget(ctx, toast); removed || err == nil || !strings.Contains(err.Error(), "transfer under way") {
		t.Fatalf("Forget during a transfer: %v, %v; want it to wait, and give up with ctx", removed, err)
	}
	if _, err := os.Stat(filepath.Join(s.baseDir(toast), "base.json")); err != nil {
		t.Fatalf("a Forget that gave up removed the base: %v", err)
	}
	unlock()

	if removed, err := s.Forget(context.Background(), toast); !removed || err != nil {
		t.Fatalf("Forget: %v, %v", removed, err)
	}
	if _, err := os.Lstat(s.baseDir(toast)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("toast's base directory is still there: %v", err)
	}
	if m, c := s.loadBase(toast); m != nil || c != nil {
		t.Errorf("toast's base is still loaded (from memory): %v", m)
	}
	if h := s.loadHold(toast, nil); len(h.Confirmed) != 0 {
		t.Errorf("toast's hold is still there: %+v", h)
	}
	for _, kept := range []string{filepath.Join(s.Root(toast), "results", "a.txt"), filepath.Join(s.baseDir(nux), "base.json"), journal} {
		if _, err := os.Stat(kept); err != nil {
			t.Errorf("%s went with toast: %v", kept, err)
		}
	}
	if removed, err := s.Forget(context.Background(), toast); removed || err != nil {
		t.Errorf("a second Forget: %v, %v; want nothing removed", removed, err)
	}
}
