package state

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

func TestLayout(t *testing.T) {
	d := For("/town")
	for got, want := range map[string]string{
		d.Path():     "/town/.runtime/hostd",
		d.Socket():   "/town/.runtime/hostd/hostd.sock",
		d.Config():   "/town/.runtime/hostd/config.yaml",
		d.Liveness(): "/town/.runtime/hostd/liveness.json",
		d.Upstream(): "/town/.runtime/hostd/upstream.json",
		d.Hooks():    "/town/.runtime/hostd/hooks",
		d.ResetKey(): "/town/.runtime/hostd/quic-reset.key",
		d.Relay():    "/town/.runtime/hostd/relay",
		d.PolecatData(wire.Identity{Rig: "gastown", Name: "toast"}): "/town/.runtime/hostd/data/gastown/toast",
		d.RelayTemp(wire.Identity{Rig: "gastown", Name: "toast"}):   "/town/.runtime/hostd/relay/tmp/gastown/toast",
	} {
		if got != want {
			t.Errorf("got %s, want %s", got, want)
		}
	}
}

func TestEnsure(t *testing.T) {
	town := t.TempDir()
	d := For(town)
	if err := os.MkdirAll(d.Path(), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := d.Ensure(); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(d.Path()); st.Mode().Perm() != 0o700 {
		t.Errorf("runtime directory mode %v, want 0700", st.Mode().Perm())
	}
}

func TestLoadSave(t *testing.T) {
	type item struct {
		Rig    string `json:"rig"`
		Branch string `json:"branch"`
	}
	dir := t.TempDir()
	cases := []struct {
		name    string
		content *string // nil: no file
		want    []item
		corrupt bool
	}{
		{"missing", nil, nil, false},
		{"saved", ptr(`[{"rig":"gastown","branch":"polecat/nux"}]`), []item{{"gastown", "polecat/nux"}}, false},
		{"truncated", ptr(`[{"rig":"gas`), nil, true},
		{"wrong shape", ptr(`{"rig":"gastown"}`), nil, true},
		{"empty", ptr(``), nil, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(dir, c.name+".json")
			if c.content != nil {
				if err := os.WriteFile(p, []byte(*c.content), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			var got []item
			err := Load(p, &got)
			var ce *CorruptError
			if c.corrupt != errors.As(err, &ce) {
				t.Fatalf("error %v, corrupt expected: %v", err, c.corrupt)
			}
			if c.corrupt {
				if ce.Path != p {
					t.Errorf("corrupt error names %s, want %s", ce.Path, p)
				}
				if b, _ := os.ReadFile(p); string(b) != *c.content {
					t.Error("a corrupt file was changed by loading it")
				}
				return
			}
			if len(got) != len(c.want) || (len(got) > 0 && got[0] != c.want[0]) {
				t.Errorf("loaded %v, want %v", got, c.want)
			}
		})
	}
	p := filepath.Join(dir, "round.json")
	in := []item{{"gastown", "polecat/a"}, {"beads", "polecat/b"}}
	if err := Save(p, in); err != nil {
		t.Fatal(err)
	}
	var out []item
	if err := Load(p, &out); err != nil || len(out) != 2 || out[1] != in[1] {
		t.Errorf("round trip: %v, %v", out, err)
	}
	if st, _ := os.Stat(p); st.Mode().Perm() != 0o600 {
		t.Errorf("saved with mode %v, want 0600", st.Mode().Perm())
	}
}

func TestQUICResetKeyKept(t *testing.T) {
	d := For(t.TempDir())
	k1, err := d.QUICResetKey()
	if err != nil {
		t.Fatal(err)
	}
	k2, err := d.QUICResetKey()
	if err != nil || *k1 != *k2 {
		t.Fatalf("second read gave another key (%v)", err)
	}
	if *k1 == [32]byte{} {
		t.Error("key is all zeros")
	}
}

func ptr(s string) *string { return &s }

// TestRemovePolecat: what the runtime directory keeps of one polecat in
// directories of its own goes, and nothing of another polecat's, of the
// rig's or of the shared files; a second removal finds nothing.
func TestRemovePolecat(t *testing.T) {
	d := For(t.TempDir())
	toast, nux := wire.Identity{Rig: "gastown", Name: "toast"}, wire.Identity{Rig: "gastown", Name: "nux"}
	for _, f := range []string{
		filepath.Join(d.PolecatData(toast), "base.json"), filepath.Join(d.PolecatData(toast), "hold.json"),
		filepath.Join(d.RelayTemp(toast), "sub", "x"),
		filepath.Join(d.PolecatData(nux), "base.json"), filepath.Join(d.RelayTemp(nux), "x"),
		filepath.Join(d.Data(), "journal.jsonl"), d.Liveness(),
	} {
		if err := os.MkdirAll(filepath.Dir(f), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	removed, err := d.RemovePolecat(toast)
	if want := []string{d.PolecatData(toast), d.RelayTemp(toast)}; err != nil || !slices.Equal(removed, want) {
		t.Fatalf("removed %v, %v; want %v", removed, err, want)
	}
	for _, gone := range []string{d.PolecatData(toast), d.RelayTemp(toast)} {
		if _, err := os.Lstat(gone); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s is still there (%v)", gone, err)
		}
	}
	for _, kept := range []string{d.PolecatData(nux), d.RelayTemp(nux), filepath.Join(d.Data(), "journal.jsonl"), d.Liveness()} {
		if _, err := os.Lstat(kept); err != nil {
			t.Errorf("%s went with toast: %v", kept, err)
		}
	}
	if removed, err := d.RemovePolecat(toast); err != nil || len(removed) != 0 {
		t.Errorf("a second removal: %v, %v; want nothing", removed, err)
	}
	if _, err := d.RemovePolecat(wire.Identity{Rig: "gastown", Name: ".."}); err == nil {
		t.Error("an invalid identity was taken")
	}
}

// TestRemoveIn: the removal stays in its root whatever the names say: a
// name that is not one, or a symlink to a directory outside, removes
// nothing outside (the link itself goes).
func TestRemoveIn(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	victim := filepath.Join(outside, "victim")
	if err := os.WriteFile(victim, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "rig"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root, "rig", "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root, "up")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		elems   []string
		removed bool
		err     string
	}{
		{"dot-dot", []string{"..", filepath.Base(outside)}, false, "one name"},
		{"separator", []string{"rig/../..", "x"}, false, "one name"},
		{"empty", []string{"rig", ""}, false, "one name"},
		{"through a link out", []string{"up", "victim"}, false, "path escapes"},
		{"missing", []string{"rig", "nobody"}, false, ""},
		{"a link at the end", []string{"rig", "link"}, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			removed, err := RemoveIn(root, tc.elems...)
			if removed != tc.removed || (tc.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.err)) {
				t.Errorf("RemoveIn(%v): %v, %v; want %v and %q", tc.elems, removed, err, tc.removed, tc.err)
			}
			if _, err := os.Stat(victim); err != nil {
				t.Fatalf("the file outside the root went: %v", err)
			}
		})
	}
	if removed, err := RemoveIn(filepath.Join(root, "none"), "rig", "x"); removed || err != nil {
		t.Errorf("a missing root: %v, %v", removed, err)
	}
}
