package data

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	datasync "github.com/polecat-sidecar/sidecar/sync"
	"github.com/polecat-sidecar/sidecar/sync/archive"
	"github.com/polecat-sidecar/sidecar/tunnel"
	"github.com/polecat-sidecar/sidecar/tunnel/tunneltest"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// hostSide is hostd's end of a tunnel to an agent's data service.
type hostSide struct {
	t    *testing.T
	sess *tunnel.Session
}

// newHostSide starts an agent's data service on root and returns hostd's
// end of its tunnel.
func newHostSide(t *testing.T, root string) (*Service, hostSide) {
	client, server := tunneltest.Pair(t, wire.Identity{Rig: "gastown", Name: "furiosa"})
	svc, err := New(Config{Root: root, StateDir: t.TempDir(), Checkpoint: -1, Logger: slog.New(slog.DiscardHandler)}, tunneltest.Fixed{S: client})
	if err != nil {
		t.Fatal(err)
	}
	tunneltest.Serve(t, client, svc)
	return svc, hostSide{t: t, sess: server}
}

// push sends src's files under p to the agent as op, as hostd does, and
// returns the agent's result.
func (h hostSide) push(op, src string, p datasync.Policy) wire.SyncResult {
	h.t.Helper()
	st := h.open(wire.SyncRequest{Op: op, Include: p.Include, Exclude: p.Exclude})
	defer st.Close()
	if _, _, err := archive.Pack(context.Background(), src, p, st); err != nil {
		h.t.Fatal(err)
	}
	_ = st.CloseWrite()
	res, err := wire.ReadSyncResult(st)
	if err != nil {
		h.t.Fatal(err)
	}
	return res
}

// pull asks the agent for all its data under p, as hostd does without a
// base, and unpacks it into a new directory. (Without Full, files the
// agent last exchanged and has not touched for 2 s are left out, against
// a base this side does not keep.)
func (h hostSide) pull(p datasync.Policy) *datasync.Manifest {
	h.t.Helper()
	st := h.open(wire.SyncRequest{Op: wire.SyncPull, Include: p.Include, Exclude: p.Exclude, Full: true})
	defer st.Close()
	m, err := archive.Unpack(context.Background(), st, h.t.TempDir(), p, datasync.Limits{})
	if err != nil {
		h.t.Fatalf("the agent's archive: %v", err)
	}
	_ = wire.WriteSyncResult(st, wire.SyncResult{})
	_ = st.CloseWrite()
	return m
}

func (h hostSide) open(req wire.SyncRequest) *tunnel.Stream {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	h.t.Cleanup(cancel)
	st, err := h.sess.OpenStream(ctx, wire.KindSync, req)
	if err != nil {
		h.t.Fatal(err)
	}
	return st
}

// held runs f with the service's turn, as its transfers do.
func held(t *testing.T, svc *Service, f func() error) error {
	t.Helper()
	unlock, err := svc.lock(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	return f()
}

// TestInstallRigFiles: the rig's files hostd pushes (push-rig) go into the
// data root beside the polecat's own, but not into the base: a root that
// has only them still has none of the polecat's data, and what the agent
// sends back never holds them.
func TestInstallRigFiles(t *testing.T) {
	own := datasync.Policy{Include: datasync.DefaultInclude}
	rig := datasync.Policy{Include: datasync.DefaultRigInclude}
	ownSrc := root(t, map[string]string{"CLAUDE.md": "prime", "results/r.txt": "r"})
	rigSrc := root(t, map[string]string{".claude/settings.json": `{"hooks": {}}`, ".claude/commands/handoff.md": "handoff"})
	dir := filepath.Join(t.TempDir(), "work")
	svc, host := newHostSide(t, dir)

	if res := host.push(wire.SyncPushRig, rigSrc, rig); res.Error != "" || res.Files != 2 {
		t.Fatalf("push-rig: %+v", res)
	}
	if err := held(t, svc, func() error { return svc.noData(svc.policy) }); err == nil {
		t.Fatal("a root with only the rig's files counts as having the polecat's data")
	}
	if res := host.push(wire.SyncPush, ownSrc, own); res.Error != "" || res.Files != 2 {
		t.Fatalf("push: %+v", res)
	}
	if res := host.push(wire.SyncPushRig, rigSrc, rig); res.Error != "" {
		t.Fatalf("push-rig after the push: %+v", res)
	}
	for rel, want := range map[string]string{"CLAUDE.md": "prime", ".claude/settings.json": `{"hooks": {}}`, ".claude/commands/handoff.md": "handoff"} {
		if b, err := os.ReadFile(filepath.Join(dir, rel)); err != nil || string(b) != want {
			t.Errorf("%s in the data root: %q, %v", rel, b, err)
		}
	}
	if err := held(t, svc, func() error { return svc.noData(svc.policy) }); err != nil {
		t.Fatalf("the polecat's data is in, yet: %v", err)
	}
	var base *datasync.Manifest
	_ = held(t, svc, func() error { base = svc.last; return nil })
	for _, e := range base.Entries {
		if rig.Allowed(e.Path) {
			t.Errorf("the base holds the rig's %s", e.Path)
		}
	}
	// The container changes the rig's settings; a pull sends its own data
	// alone.
	_ = os.WriteFile(filepath.Join(dir, ".claude/settings.json"), []byte(`{"hooks": {"Stop": []}}`), 0o644)
	m := host.pull(own)
	for _, e := range m.Entries {
		if rig.Allowed(e.Path) || rig.Leads(e.Path) {
			t.Errorf("the agent sent the rig's %s", e.Path)
		}
	}
	if files, _ := m.Resolved().Files(); files != 2 {
		t.Errorf("the agent sent %d files, want its own 2", files)
	}
}
