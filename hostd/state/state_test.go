package state

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
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
