package data

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	datasync "github.com/polecat-sidecar/sidecar/sync"
	"github.com/polecat-sidecar/sidecar/sync/archive"
	"github.com/polecat-sidecar/sidecar/tunnel"
	"github.com/polecat-sidecar/sidecar/tunnel/tunneltest"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

func files(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%03d", prefix, i)
	}
	return out
}

// TestHold: the delete hold adds up what transfers take away of the files
// hostd last confirmed, so many small transfers, files the polecat added
// to swell the count, and files taken away twice do not get round it.
func TestHold(t *testing.T) {
	confirmed := files("results/op", 64)
	tests := []struct {
		name      string
		transfers [][]string // what each transfer takes away
		share     float64
		held      []bool // each transfer held or not
	}{
		{"half at once passes, one more is held", [][]string{confirmed[:32], confirmed[32:33]}, 0.5, []bool{false, true}},
		{"halving in small steps adds up", [][]string{confirmed[:16], confirmed[16:32], confirmed[32:40]}, 0.5, []bool{false, false, true}},
		{"all at once", [][]string{confirmed}, 0.5, []bool{true}},
		{"the polecat's own files do not count", [][]string{files("results/mine", 200)}, 0.5, []bool{false}},
		{"its own files do not swell the count", [][]string{files("results/mine", 64), confirmed[:40]}, 0.5, []bool{false, true}},
		{"a file taken twice counts once", [][]string{confirmed[:30], confirmed[:30], confirmed[30:32]}, 0.5, []bool{false, false, false}},
		{"taking nothing more passes when already over", [][]string{confirmed[:60], nil}, 1, []bool{false, false}},
		{"a share of 1 never holds", [][]string{confirmed}, 1, []bool{false}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := hold{Confirmed: confirmed}
			for i, lost := range tc.transfers {
				next := h.after(lost)
				if got := h.over(next, tc.share); got != tc.held[i] {
					t.Fatalf("transfer %d (losing %d, %d lost before): held %v, want %v", i+1, len(lost), len(h.Lost), got, tc.held[i])
				}
				if !tc.held[i] {
					h = next
				}
			}
		})
	}
}

// manifestOf is a manifest of regular files at paths.
func manifestOf(paths ...[]string) *datasync.Manifest {
	m := &datasync.Manifest{Version: datasync.ManifestVersion}
	for _, ps := range paths {
		for _, p := range ps {
			m.Entries = append(m.Entries, datasync.Entry{Path: p, Type: datasync.TypeFile, Mode: 0o644})
		}
	}
	return m
}

// TestHoldFetched: an agent's fetch changes the hold only where the host
// changed the tree since the container's base.
func TestHoldFetched(t *testing.T) {
	ops, junk := files("results/op", 40), files("results/junk", 200)
	tests := []struct {
		name            string
		h               hold
		sent, prev      *datasync.Manifest
		confirmed, lost int
	}{
		{"the polecat's files never join", hold{Confirmed: ops}, manifestOf(ops, junk), manifestOf(ops, junk), 40, 0},
		{"with no base yet, every file sent is the host's", hold{Confirmed: []string{}}, manifestOf(ops, junk), nil, 240, 0},
		{"files added on the host join", hold{Confirmed: ops[:20]}, manifestOf(ops, junk), manifestOf(ops[:20], junk), 40, 0},
		{"what was lost stays lost", hold{Confirmed: ops, Lost: ops[:10]}, manifestOf(ops[10:], junk), manifestOf(ops[10:], junk), 40, 10},
		{"what was emptied stays lost", hold{Confirmed: ops, Lost: ops[:10]}, manifestOf(ops), manifestOf(ops), 40, 10},
		{"restored on the host, no longer lost", hold{Confirmed: ops, Lost: ops[:10]}, manifestOf(ops), manifestOf(ops[10:]), 40, 0},
		{"removed on the host, no longer confirmed", hold{Confirmed: ops}, manifestOf(ops[10:]), manifestOf(ops), 30, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.h.fetched(tt.sent, tt.prev)
			if len(got.Confirmed) != tt.confirmed || len(got.Lost) != tt.lost {
				t.Errorf("%d confirmed, %d lost; want %d and %d", len(got.Confirmed), len(got.Lost), tt.confirmed, tt.lost)
			}
		})
	}
}

// holdRig is the data service on one end of a real tunnel and, on the
// other, a polecat speaking the protocol itself: it opens fetches and
// uploads, and fakeAgent installs what hostd pushes into container.
type holdRig struct {
	s               *Service
	id              wire.Identity
	client, server  *tunnel.Session
	host, container string
}

func newHoldRig(t *testing.T, hostFiles []string) *holdRig {
	t.Helper()
	id := wire.Identity{Rig: "gastown", Name: "furiosa"}
	town, agentDir := t.TempDir(), t.TempDir()
	r := &holdRig{id: id, host: filepath.Join(town, "gastown", "polecats", "furiosa"), container: filepath.Join(agentDir, wire.SyncPush)}
	r.writeHost(t, hostFiles)
	var err error
	r.s, err = New(Config{Town: town, Dir: t.TempDir(), Logger: slog.New(slog.DiscardHandler)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	r.client, r.server = tunneltest.Pair(t, id)
	tunneltest.Serve(t, r.server, r.s)
	tunneltest.Serve(t, r.client, fakeAgent{dir: agentDir})
	return r
}

// writeHost writes files into the host data root, as the operator would.
func (r *holdRig) writeHost(t *testing.T, files []string) {
	t.Helper()
	tree := map[string]string{}
	for _, f := range files {
		tree[f] = "the operator's " + f
	}
	writeTree(t, r.host, tree)
}

// open opens an agent's sync stream for op, writes what fill writes, and
// returns hostd's result.
func (r *holdRig) open(t *testing.T, op string, fill func(*tunnel.Stream) error) wire.SyncResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := r.client.OpenStream(ctx, wire.KindSync, wire.SyncRequest{Op: op, Reason: "checkpoint"})
	if err != nil {
		t.Fatalf("opening a %s: %v", op, err)
	}
	defer st.Close()
	if fill != nil {
		if err := fill(st); err != nil {
			t.Fatalf("writing a %s: %v", op, err)
		}
	}
	if err := st.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	res, err := wire.ReadSyncResult(st)
	if err != nil {
		t.Fatalf("the %s's result: %v", op, err)
	}
	return res
}

// fetch asks hostd for the data, as an agent that has none does.
func (r *holdRig) fetch(t *testing.T) {
	t.Helper()
	if res := r.open(t, wire.SyncFetch, nil); res.Error != "" {
		t.Fatalf("fetch: %s", res.Error)
	}
}

// upload changes the container (adds files, removes others) and sends it
// whole; it returns why hostd refused it ("" when it took it).
func (r *holdRig) upload(t *testing.T, add, remove []string) string {
	t.Helper()
	tree := map[string]string{}
	for _, f := range add {
		tree[f] = "the polecat's " + f
	}
	writeTree(t, r.container, tree)
	for _, f := range remove {
		if err := os.Remove(filepath.Join(r.container, filepath.FromSlash(f))); err != nil {
			t.Fatal(err)
		}
	}
	return r.open(t, wire.SyncUpload, func(st *tunnel.Stream) error {
		_, _, err := archive.Pack(context.Background(), r.container, r.s.policy, st)
		return err
	}).Error
}

// onHost counts files among the host data root's.
func (r *holdRig) onHost(files []string) int {
	n := 0
	for _, f := range files {
		if _, err := os.Stat(filepath.Join(r.host, filepath.FromSlash(f))); err == nil {
			n++
		}
	}
	return n
}

// TestHoldAgentFetch: only the operator confirms the files the delete
// hold counts from. A polecat that uploads its own junk, fetches it back
// and then deletes the operator's files is held: the fetch neither clears
// what it took away nor lets its junk dilute the share. Files the operator
// added on the host are confirmed by the next fetch; the polecat's own
// files come and go freely; the operator's push confirms what it sends.
func TestHoldAgentFetch(t *testing.T) {
	ops, added, junk := files("results/op", 40), files("results/added", 40), files("results/junk", 200)
	type step func(t *testing.T, r *holdRig) string // the refusal of an upload, "" otherwise
	fetch := func(t *testing.T, r *holdRig) string { r.fetch(t); return "" }
	push := func(t *testing.T, r *holdRig) string { // the operator's hostd sync push
		if _, err := r.s.push(context.Background(), r.server, "requested", true, nil); err != nil {
			t.Fatalf("push: %v", err)
		}
		return ""
	}
	addOnHost := func(files []string) step {
		return func(t *testing.T, r *holdRig) string { r.writeHost(t, files); return "" }
	}
	upload := func(add, remove []string) step {
		return func(t *testing.T, r *holdRig) string { return r.upload(t, add, remove) }
	}
	tests := []struct {
		name  string
		steps []step
		held  bool     // the last step
		left  []string // files the host keeps after it
	}{
		{"junk fetched back does not dilute the share", []step{fetch, upload(junk, nil), fetch, upload(nil, ops)}, true, ops},
		{"a fetch does not clear what was lost", []step{fetch, upload(nil, ops[:15]), fetch, upload(nil, ops[15:25])}, true, ops[15:]},
		{"files the operator added are confirmed by a fetch", []step{fetch, addOnHost(added), upload(junk, nil), fetch, upload(nil, append(ops[:10:10], added...))}, true, added},
		{"the polecat's own files come and go", []step{fetch, upload(junk, nil), fetch, upload(nil, junk)}, false, ops},
		{"the operator's push confirms what it sends", []step{fetch, upload(junk, nil), push, upload(nil, ops)}, false, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newHoldRig(t, ops)
			var refused string
			for _, s := range tt.steps {
				refused = s(t, r)
			}
			if held := strings.Contains(refused, "held"); held != tt.held {
				t.Errorf("the last upload: refused %q, want held %v", refused, tt.held)
			}
			if n := r.onHost(tt.left); n != len(tt.left) {
				t.Errorf("%d of the %d files that should stay are on the host", n, len(tt.left))
			}
		})
	}
}
