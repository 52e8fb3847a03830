package sandbox

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// standIn is a stand-in container runtime (docker is outside the
// product): 'ps' lists the sandboxes of ps (name, ID, polecat and home
// label, tab-separated, a line each), 'container inspect' finds any,
// 'rm' is recorded in log.
func standIn(t *testing.T, ps string) (bin, log string) {
	dir := t.TempDir()
	log = filepath.Join(dir, "calls")
	bin = filepath.Join(dir, "docker")
	listed := filepath.Join(dir, "ps")
	if err := os.WriteFile(listed, []byte(ps), 0o644); err != nil {
		t.Fatal(err)
	}
	script := "#!/bin/sh\ncase \"$1\" in\n" +
		"ps) cat " + listed + " ;;\n" +
		"container) printf 'true\\t\\t\\t\\n' ;;\n" +
		"rm) echo \"$@\" >> " + log + " ;;\n" +
		"*) exit 1 ;;\nesac\n"
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin, log
}

// TestReaper: a sandbox whose polecat directory is gone, or made anew
// since the sandbox was (Gas Town gave the name to its next polecat), is
// removed by its ID, its polecat revoked, then forgotten, on the second
// pass that finds it so, not the first; one whose directory is the one
// it was made for stays, as does one made before sandboxes were
// labelled with it.
func TestReaper(t *testing.T) {
	town := t.TempDir()
	home := func(name string) string {
		if err := os.MkdirAll(filepath.Join(town, "gastown", "polecats", name), 0o755); err != nil {
			t.Fatal(err)
		}
		h, err := Home(town, wire.Identity{Rig: "gastown", Name: name})
		if err != nil || h == "" {
			t.Fatalf("Home of %s: %q, %v", name, h, err)
		}
		return h
	}
	nux, slit := home("nux"), home("slit")
	home("furiosa")
	// slit's directory made anew: the sandbox was made for the one before.
	if err := os.Remove(filepath.Join(town, "gastown", "polecats", "slit")); err != nil {
		t.Fatal(err)
	}
	if home("slit") == slit {
		t.Fatal("a directory made anew has the Home of the one before")
	}
	bin, log := standIn(t, "gt-gastown-nux\tid-nux\tgastown/nux\t"+nux+"\n"+
		"gt-gastown-slit\tid-slit\tgastown/slit\t"+slit+"\n"+
		"stray\tid-stray\tnot an identity\t\n"+
		"gt-gastown-furiosa\tid-furiosa\tgastown/furiosa\t\n"+
		"gt-gastown-toast\tid-toast\tgastown/toast\t\n") // the last line ends in an empty label
	calls := func() string { b, _ := os.ReadFile(log); return string(b) }
	var revoked, forgotten []wire.Identity
	r := &Reaper{Town: town, Runtime: CLI{Bin: bin}, Logger: slog.New(slog.DiscardHandler),
		Revoke: func(id wire.Identity) error { revoked = append(revoked, id); return nil },
		Forget: func(_ context.Context, id wire.Identity) error {
			if !strings.Contains(calls(), "id-"+id.Name) {
				t.Errorf("%s forgotten before its sandbox was removed", id)
			}
			forgotten = append(forgotten, id)
			return nil
		}}

	if err := r.Pass(context.Background()); err != nil {
		t.Fatal(err)
	}
	if calls() != "" || len(revoked) != 0 || len(forgotten) != 0 {
		t.Fatalf("the first pass removed %q, revoked %v and forgot %v; it should only note toast and slit", calls(), revoked, forgotten)
	}
	if err := r.Pass(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(calls()); got != "rm -f -v id-slit\nrm -f -v id-toast" {
		t.Errorf("the second pass ran %q, want toast's and slit's sandboxes removed by their IDs", got)
	}
	slitID := wire.Identity{Rig: "gastown", Name: "slit"}
	if want := []wire.Identity{slitID, toast}; !slices.Equal(revoked, want) || !slices.Equal(forgotten, want) {
		t.Errorf("revoked %v and forgot %v, want toast and slit", revoked, forgotten)
	}
}

// TestReaperNoRuntime: without the runtime's CLI a pass says so, and Run
// stops.
func TestReaperNoRuntime(t *testing.T) {
	r := &Reaper{Town: t.TempDir(), Runtime: CLI{Bin: "no-such-runtime-here"}, Logger: slog.New(slog.DiscardHandler)}
	if err := r.Pass(context.Background()); err == nil || !strings.Contains(err.Error(), "install it") {
		t.Errorf("Pass without a runtime: %v", err)
	}
}
