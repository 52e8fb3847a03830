package data

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	datasync "github.com/polecat-sidecar/sidecar/sync"
	"github.com/polecat-sidecar/sidecar/sync/archive"
	"github.com/polecat-sidecar/sidecar/tunnel"
	"github.com/polecat-sidecar/sidecar/tunnel/tunneltest"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// rigSettings is a rig's polecats/.claude/settings.json as Gas Town writes
// it on the host.
const rigSettings = `{"hooks": {"SessionStart": [{"matcher": "", "hooks": [{"type": "command", "command": "/home/x/go/bin/gt prime --hook"}]}]}}`

// fakeAgent installs what hostd pushes into a directory of dir per op, as
// an agent would (archive.Extract with the request's policy), and answers;
// it refuses the op refuse.
type fakeAgent struct{ dir, refuse string }

func (a fakeAgent) ServeStream(ctx context.Context, st *tunnel.Stream) {
	req, ok := tunnel.DecodeRequest[wire.SyncRequest](st, nil)
	if !ok {
		return
	}
	if req.Op == a.refuse {
		_ = st.Reject(fmt.Sprintf("sync operation %q is not one hostd opens (push, pull)", req.Op))
		return
	}
	var res wire.SyncResult
	m, err := archive.Extract(ctx, st, filepath.Join(a.dir, req.Op), datasync.Policy{Include: req.Include, Exclude: req.Exclude}, datasync.Limits{})
	if err != nil {
		res.Error = err.Error()
	} else {
		res.Files, res.Bytes = m.Files()
	}
	_ = wire.WriteSyncResult(st, res)
	_ = st.CloseWrite()
}

// TestPushRig: a push sends the polecat's own data, then its rig's files
// under their own op and policy, the settings' hook commands naming the
// host's gt made bare; the host's files stay as they were; both are
// journaled; a rig root without such files sends nothing more.
func TestPushRig(t *testing.T) {
	id := wire.Identity{Rig: "gastown", Name: "furiosa"}
	tests := []struct {
		name    string
		rigRoot bool
		want    map[string]string // path under the fake agent's directory -> content ("" absent)
		ops     []string
	}{
		{"Gas Town's layout", true, map[string]string{
			"push/CLAUDE.md":                           "prime",
			"push/.claude/settings.json":               "",
			"push-rig/.claude/settings.json":           "gt prime --hook",
			"push-rig/.claude/commands/handoff.md":     "handoff",
			"push-rig/.claude/settings.local.json.bak": "",
			"push-rig/furiosa/CLAUDE.md":               "",
		}, []string{wire.SyncPush, wire.SyncPushRig}},
		{"no rig files", false, map[string]string{"push/CLAUDE.md": "prime", "push-rig": ""}, []string{wire.SyncPush}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			town, agentDir := t.TempDir(), t.TempDir()
			files := map[string]string{
				"gastown/polecats/furiosa/CLAUDE.md":             "prime",
				"gastown/polecats/furiosa/.claude/settings.json": "a polecat's own, no longer crossing",
			}
			if tt.rigRoot {
				files["gastown/polecats/.claude/settings.json"] = rigSettings
				files["gastown/polecats/.claude/commands/handoff.md"] = "handoff"
				files["gastown/polecats/.claude/settings.local.json.bak"] = "not whitelisted"
			}
			writeTree(t, town, files)
			s, err := New(Config{Town: town, Dir: t.TempDir(), Logger: slog.New(slog.DiscardHandler)}, nil)
			if err != nil {
				t.Fatal(err)
			}
			client, server := tunneltest.Pair(t, id)
			tunneltest.Serve(t, client, fakeAgent{dir: agentDir})
			if res, err := s.push(context.Background(), server, "requested", true, nil); err != nil || res.Files != 1 {
				t.Fatalf("push: %+v, %v", res, err)
			}
			for rel, want := range tt.want {
				b, err := os.ReadFile(filepath.Join(agentDir, rel))
				if got := string(b); (want == "") != (err != nil) || !strings.Contains(got, want) {
					t.Errorf("%s in the container: %q (%v), want %q", rel, got, err, want)
				}
			}
			if b, _ := os.ReadFile(filepath.Join(agentDir, "push-rig/.claude/settings.json")); strings.Contains(string(b), "/home/x") {
				t.Errorf("the container's settings name the host's gt:\n%s", b)
			}
			if tt.rigRoot {
				if b, _ := os.ReadFile(filepath.Join(town, "gastown/polecats/.claude/settings.json")); string(b) != rigSettings {
					t.Errorf("the host's settings changed:\n%s", b)
				}
			}
			recs, err := s.Journal()
			if err != nil {
				t.Fatal(err)
			}
			var ops []string
			for _, r := range recs {
				ops = append(ops, r.Op)
				if r.Error != "" || r.Reason != "requested" {
					t.Errorf("journal: %+v", r)
				}
			}
			if strings.Join(ops, " ") != strings.Join(tt.ops, " ") {
				t.Errorf("journal ops %v, want %v", ops, tt.ops)
			}
		})
	}
}

// TestPushRigRefused: when the agent takes the polecat's data but refuses
// its rig's files (an agent from before push-rig), the push says so, and
// the polecat's data is in.
func TestPushRigRefused(t *testing.T) {
	id := wire.Identity{Rig: "gastown", Name: "furiosa"}
	town, agentDir := t.TempDir(), t.TempDir()
	writeTree(t, town, map[string]string{"gastown/polecats/furiosa/CLAUDE.md": "prime", "gastown/polecats/.claude/settings.json": rigSettings})
	s, err := New(Config{Town: town, Dir: t.TempDir(), Logger: slog.New(slog.DiscardHandler)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	client, server := tunneltest.Pair(t, id)
	tunneltest.Serve(t, client, fakeAgent{dir: agentDir, refuse: wire.SyncPushRig})
	res, err := s.push(context.Background(), server, "fetch", false, nil)
	if err == nil || !strings.Contains(err.Error(), "has its own data, but not its rig's files") || res.Error != "" || res.Files != 1 {
		t.Errorf("push: %+v, %v", res, err)
	}
	recs, _ := s.Journal()
	if len(recs) != 2 || recs[0].Error != "" || recs[1].Op != wire.SyncPushRig || recs[1].Error == "" {
		t.Errorf("journal: %+v", recs)
	}
}

// writeTree writes files (path under dir -> content).
func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for rel, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
