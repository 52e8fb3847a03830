package data

import (
	"log/slog"
	"os"
	"path/filepath"
	"testing"
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
