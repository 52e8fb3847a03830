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
// product): 'ps' lists two sandboxes, 'rm' is recorded in log.
func standIn(t *testing.T) (bin, log string) {
	dir := t.TempDir()
	log = filepath.Join(dir, "calls")
	bin = filepath.Join(dir, "docker")
	script := "#!/bin/sh\ncase \"$1\" in\n" +
		"ps) printf 'gt-gastown-toast\\tgastown/toast\\ngt-gastown-nux\\tgastown/nux\\nstray\\tnot an identity\\n' ;;\n" +
		"rm) echo \"$@\" >> " + log + " ;;\n" +
		"*) exit 1 ;;\nesac\n"
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin, log
}

// TestReaper: a sandbox whose polecat directory is gone is removed, its
// polecat revoked, then forgotten, on the second pass that finds it gone,
// not the first; one whose directory is there stays.
func TestReaper(t *testing.T) {
	bin, log := standIn(t)
	calls := func() string { b, _ := os.ReadFile(log); return string(b) }
	town := t.TempDir()
	if err := os.MkdirAll(filepath.Join(town, "gastown", "polecats", "nux"), 0o755); err != nil {
		t.Fatal(err)
	}
	var revoked, forgotten []wire.Identity
	r := &Reaper{Town: town, Runtime: Runtime{Bin: bin}, Logger: slog.New(slog.DiscardHandler),
		Revoke: func(id wire.Identity) error { revoked = append(revoked, id); return nil },
		Forget: func(_ context.Context, id wire.Identity) error {
			if !strings.Contains(calls(), "gt-gastown-"+id.Name) {
				t.Errorf("%s forgotten before its sandbox was removed", id)
			}
			forgotten = append(forgotten, id)
			return nil
		}}

	if err := r.Pass(context.Background()); err != nil {
		t.Fatal(err)
	}
	if calls() != "" || len(revoked) != 0 || len(forgotten) != 0 {
		t.Fatalf("the first pass removed %q, revoked %v and forgot %v; it should only note toast missing", calls(), revoked, forgotten)
	}
	if err := r.Pass(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(calls()); got != "rm -f -v gt-gastown-toast" {
		t.Errorf("the second pass ran %q, want toast's sandbox removed", got)
	}
	if !slices.Equal(revoked, []wire.Identity{toast}) || !slices.Equal(forgotten, []wire.Identity{toast}) {
		t.Errorf("revoked %v and forgot %v, want toast alone", revoked, forgotten)
	}
}

// TestReaperNoRuntime: without the runtime's CLI a pass says so, and Run
// stops.
func TestReaperNoRuntime(t *testing.T) {
	r := &Reaper{Town: t.TempDir(), Runtime: Runtime{Bin: "no-such-runtime-here"}, Logger: slog.New(slog.DiscardHandler)}
	if err := r.Pass(context.Background()); err == nil || !strings.Contains(err.Error(), "install it") {
		t.Errorf("Pass without a runtime: %v", err)
	}
}
