package archive

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/polecat-sidecar/sidecar/sync"
	"github.com/polecat-sidecar/sidecar/sync/internal/fixture"
)

// TestPackRacy: a file rewritten with the same size in the same second
// as the pack that recorded it is read again by the next delta pack, not
// left out as unchanged (it was, when only the two-second rule guarded
// it: the pack after the write ran more than two seconds later).
func TestPackRacy(t *testing.T) {
	src := t.TempDir()
	fixture.WriteTree(t, src, map[string]string{"results/old.txt": "old", "results/b.txt": "b1"})
	old := time.Now().Add(-time.Hour)
	_ = os.Chtimes(filepath.Join(src, "results/old.txt"), old, old)
	// Written 1.5 s before the pack: within the margin, so racy.
	written := time.Now().Add(-1500 * time.Millisecond)
	b := filepath.Join(src, "results/b.txt")
	_ = os.Chtimes(b, written, written)

	m, _, err := Pack(context.Background(), src, testPolicy, &bytes.Buffer{}, TrackRacy())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(m.Racy, []string{"results/b.txt"}) {
		t.Fatalf("racy %v, want results/b.txt alone", m.Racy)
	}
	last := m.Resolved()
	// The same size and, to the second, the same time: what a write in
	// the same second as the pack leaves.
	if err := os.WriteFile(b, []byte("b2"), 0o644); err != nil {
		t.Fatal(err)
	}
	_ = os.Chtimes(b, written, written)
	time.Sleep(600 * time.Millisecond) // the write is now more than 2 s old

	next, _, err := Pack(context.Background(), src, testPolicy, &bytes.Buffer{}, Since(last), TrackRacy())
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range next.Entries {
		switch e.Path {
		case "results/b.txt":
			if e.Unchanged || e.SHA256 == entryOf(m, e.Path).SHA256 {
				t.Errorf("the rewritten b.txt was left out as unchanged: %+v", e)
			}
		case "results/old.txt":
			if !e.Unchanged {
				t.Error("old.txt, untouched for an hour, was sent again")
			}
		}
	}
	if len(next.Racy) != 0 {
		t.Errorf("racy %v in the second pack: nothing was written within 2 s of it", next.Racy)
	}
	// Without TrackRacy nothing is listed (hostd's packs).
	if plain, _, _ := Pack(context.Background(), src, testPolicy, &bytes.Buffer{}); plain.Racy != nil {
		t.Errorf("racy %v without TrackRacy", plain.Racy)
	}
}

// TestRootNow: the data root's clock is the one its files get, and
// finding it leaves nothing behind.
func TestRootNow(t *testing.T) {
	dir := t.TempDir()
	before := time.Now()
	got := rootNow(dir)
	if d := got.Sub(before); d < -time.Second || d > 5*time.Second {
		t.Errorf("rootNow %v, %v from this clock", got, d)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("rootNow left %v", left)
	}
	// An unwritable root falls back to this process's clock.
	if got := rootNow(filepath.Join(dir, "missing")); time.Since(got) > time.Second {
		t.Errorf("rootNow of a missing root %v", got)
	}
}

func entryOf(m *sync.Manifest, p string) sync.Entry {
	for _, e := range m.Entries {
		if e.Path == p {
			return e
		}
	}
	return sync.Entry{}
}

// TestMarkRacy: of a tree just installed with the sender's times, the
// files whose time is recent or ahead of the root's clock (the sender's
// clock ahead of this one) are racy; an old one is not, nor a directory.
func TestMarkRacy(t *testing.T) {
	now := time.Now().Truncate(time.Second)
	m := &sync.Manifest{Entries: []sync.Entry{
		{Path: "results", Type: sync.TypeDir, MTime: now},
		{Path: "results/old.txt", Type: sync.TypeFile, MTime: now.Add(-time.Hour)},
		{Path: "results/now.txt", Type: sync.TypeFile, MTime: now},
		{Path: "results/ahead.txt", Type: sync.TypeFile, MTime: now.Add(10 * time.Minute)},
	}}
	MarkRacy(t.TempDir(), m)
	if want := []string{"results/now.txt", "results/ahead.txt"}; !slices.Equal(m.Racy, want) {
		t.Fatalf("racy %v, want %v", m.Racy, want)
	}
	for _, e := range m.Resolved().Entries {
		if racy := slices.Contains(m.Racy, e.Path); racy != e.MTime.IsZero() {
			t.Errorf("%s: time %v in the record (racy %v)", e.Path, e.MTime, racy)
		}
	}
}
