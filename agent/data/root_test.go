package data

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/polecat-sidecar/sidecar/internal/settings/settingstest"
	datasync "github.com/polecat-sidecar/sidecar/sync"
)

// root makes a data root holding files (path -> content; a trailing slash
// makes a directory).
func root(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for rel, content := range files {
		p := filepath.Join(dir, rel)
		if strings.HasSuffix(rel, "/") {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestCheckRoot(t *testing.T) {
	const id = "ID1"
	p := datasync.DefaultPolicy()
	withFile := &datasync.Manifest{Version: 1, Entries: []datasync.Entry{{Path: "results/report.txt", Type: datasync.TypeFile, Mode: 0o644}}}
	empty := &datasync.Manifest{Version: 1}
	marker := datasync.RootMarkerName
	tests := []struct {
		name  string
		files map[string]string // nil: the root does not exist
		base  *datasync.Manifest
		why   string // in the error; "" for none
	}{
		{"root missing", nil, withFile, "does not exist"},
		{"marker missing", map[string]string{"results/report.txt": "r"}, withFile, "has no " + marker + ", so it is not the one the base was taken from"},
		{"marker differing", map[string]string{marker: "ID2\n", "results/report.txt": "r"}, withFile, "has another root's " + marker},
		{"marker a directory", map[string]string{marker + "/": "", "results/report.txt": "r"}, withFile, "cannot be read"},
		{"marker matching", map[string]string{marker: id + "\n", "results/report.txt": "r"}, withFile, ""},
		{"marker matching, no base", map[string]string{marker: id + "\n"}, nil, ""},
		{"marker matching, emptied", map[string]string{marker: id + "\n", "results/": "", "notes.txt": "not whitelisted"}, withFile, "holds none of the 1 whitelisted files the base has"},
		{"marker matching, empty like its base", map[string]string{marker: id + "\n"}, empty, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "missing")
			if tc.files != nil {
				dir = root(t, tc.files)
			}
			err := checkRoot(dir, id, p, tc.base)
			if tc.why == "" {
				if err != nil {
					t.Fatalf("checkRoot: %v, want the root taken as the base's", err)
				}
				return
			}
			if _, ok := errors.AsType[*noDataError](err); !ok || !strings.Contains(err.Error(), tc.why) {
				t.Fatalf("checkRoot: %v, want a *noDataError saying %q", err, tc.why)
			}
			if want := "this container has not received the polecat's data yet (its data root " + dir + " "; !strings.HasPrefix(err.Error(), want) || !strings.HasSuffix(err.Error(), "); nothing sent") {
				t.Errorf("checkRoot: %q does not name the root and say nothing was sent", err)
			}
		})
	}
}

// newService is New(cfg, nil), failing the test on an error.
func newService(t *testing.T, cfg Config) *Service {
	t.Helper()
	s, err := New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestBind: installing binds the root; a service started on the same state
// directory takes that root as its base's, and no other root.
func TestBind(t *testing.T) {
	state := t.TempDir()
	first := root(t, map[string]string{"results/report.txt": "r"})
	cfg := Config{Root: first, StateDir: state, Logger: slog.New(slog.DiscardHandler)}
	s := newService(t, cfg)
	if err := s.noData(s.policy); err == nil {
		t.Fatal("a service that never installed anything takes its root as having the data")
	}
	p := datasync.DefaultPolicy()
	s.exchanged(&datasync.Manifest{Version: 1, Entries: []datasync.Entry{{Path: "results/report.txt", Type: datasync.TypeFile, Mode: 0o644}}})
	s.bind(p)
	if b, err := os.ReadFile(filepath.Join(first, datasync.RootMarkerName)); err != nil || strings.TrimSpace(string(b)) != s.rootID {
		t.Fatalf("marker %q, %v; want %q", b, err, s.rootID)
	}
	tests := []struct {
		name   string
		root   string
		noData bool
	}{
		{"the root it installed into", first, false},
		{"a new empty root", t.TempDir(), true},
		{"a new root with files but no marker", root(t, map[string]string{"results/report.txt": "r"}), true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg.Root = tc.root
			restarted := newService(t, cfg)
			if err := restarted.noData(restarted.policy); (err != nil) != tc.noData {
				t.Errorf("noData: %v, want no data %v", err, tc.noData)
			}
		})
	}
}

// TestAdoptLegacy: the state of a gt-agent from before roots were marked
// (a policy and a base, no root id) adopts a root that still holds the
// base's files (the polecat's edits stay, nothing is fetched over them),
// and not an emptied one.
func TestAdoptLegacy(t *testing.T) {
	tests := []struct {
		name   string
		files  map[string]string
		noData bool
	}{
		{"the root it installed into", map[string]string{"results/report.txt": "x"}, false},
		{"an emptied root", map[string]string{"results/": ""}, true},
		{"a root with other whitelisted files (an image's own)", map[string]string{"results/other.txt": "x"}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			state := t.TempDir()
			writeJSON := func(name, body string) {
				if err := os.WriteFile(filepath.Join(state, name), []byte(body), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			writeJSON("sync.json", `{"include":["results"],"at":"2026-11-20T10:00:00Z"}`)
			writeJSON("sync-last.json", `{"version":1,"entries":[{"path":"results","type":"dir","mode":493},`+
				`{"path":"results/report.txt","type":"file","mode":420,"size":1,"sha256":"`+strings.Repeat("0", 64)+`"}]}`)
			dir := root(t, tc.files)
			s := newService(t, Config{Root: dir, StateDir: state, Logger: slog.New(slog.DiscardHandler)})
			if err := s.noData(s.policy); (err != nil) != tc.noData {
				t.Fatalf("noData: %v, want no data %v", err, tc.noData)
			}
			if _, err := os.Stat(filepath.Join(dir, datasync.RootMarkerName)); (err == nil) == tc.noData {
				t.Errorf("marker present %v, want %v", err == nil, !tc.noData)
			}
		})
	}
}

// TestMarkerNeverCrosses: package sync lets no policy send the marker.
func TestMarkerNeverCrosses(t *testing.T) {
	if datasync.DefaultPolicy().Allowed(datasync.RootMarkerName) {
		t.Error("the default policy lets the marker cross")
	}
	if err := (datasync.Policy{Include: []string{datasync.RootMarkerName}}).Validate(); err == nil {
		t.Error("a policy including the marker is valid")
	}
}

// TestConfig: New takes zero fields as the defaults and refuses a field
// out of its range, naming it; a negative Checkpoint means never, and
// Validate (gt-agent up's check of its settings) refuses a zero one.
func TestConfig(t *testing.T) {
	valid := func() Config {
		c := DefaultConfig()
		c.Root, c.StateDir, c.Logger = t.TempDir(), t.TempDir(), slog.New(slog.DiscardHandler)
		return c
	}
	settingstest.Run(t, valid, func(c Config) error { _, err := New(c, nil); return err }, []settingstest.Case[Config]{
		{Name: "defaults"},
		{Name: "zero is the default", Set: func(c *Config) { *c = Config{Root: c.Root, StateDir: c.StateDir} }},
		{Name: "never checkpoint", Set: func(c *Config) { c.Checkpoint = -time.Second }},
		{Name: "negative teardown", Set: func(c *Config) { c.Teardown = -time.Second }, Want: "data: Teardown is -1s: it must be above 0"},
	})
	settingstest.Run(t, valid, Config.Validate, []settingstest.Case[Config]{ // as gt-agent up checks its settings
		{Name: "zero checkpoint given", Set: func(c *Config) { c.Checkpoint = 0 }, Want: "Checkpoint is 0s: it must not be 0 (negative: never)"},
	})
}

// TestLoadLast: what a previous agent exchanged last is read back, so the
// next transfer is a delta; when it cannot be read that is said, and the
// next transfer sends everything.
func TestLoadLast(t *testing.T) {
	written := newService(t, Config{Root: t.TempDir(), StateDir: t.TempDir(), Logger: slog.New(slog.DiscardHandler)})
	written.exchanged(&datasync.Manifest{Version: 1, Entries: []datasync.Entry{
		{Path: "results/report.txt", Type: datasync.TypeFile, Mode: 0o644, Size: 1, SHA256: datasync.HashBytes([]byte("r"))}}})
	good, err := os.ReadFile(written.lastPath())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, file string // file: sync-last.json's content, "" for none
		wantFiles  int    // -1: nothing read back
		wantLog    string // "" for no log line
	}{
		{name: "none yet", wantFiles: -1},
		{name: "read back", file: string(good), wantFiles: 1},
		{name: "corrupt", file: `{"version":1,"entries":[`, wantFiles: -1, wantLog: "what was exchanged last cannot be read"},
	} {
		t.Run(c.name, func(t *testing.T) {
			state := t.TempDir()
			if c.file != "" {
				if err := os.WriteFile(filepath.Join(state, "sync-last.json"), []byte(c.file), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			var logs strings.Builder
			s := newService(t, Config{Root: t.TempDir(), StateDir: state, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			got := -1
			if s.last != nil {
				got, _ = s.last.Files()
			}
			if got != c.wantFiles {
				t.Errorf("read back %d files, want %d (-1: nothing)", got, c.wantFiles)
			}
			if c.wantLog == "" && logs.Len() > 0 || !strings.Contains(logs.String(), c.wantLog) {
				t.Errorf("logged %q, want %q", logs.String(), c.wantLog)
			}
		})
	}
}
