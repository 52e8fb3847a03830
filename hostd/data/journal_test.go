package data

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/polecat-sidecar/sidecar/hostd/data/journal"
	"github.com/polecat-sidecar/sidecar/hostd/limits"
	"github.com/polecat-sidecar/sidecar/hostd/registry"
	"github.com/polecat-sidecar/sidecar/hostd/state"
)

func newService(t *testing.T) *Service {
	t.Helper()
	reg, err := registry.New(registry.Config{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{Dir: t.TempDir(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, reg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestJournalBoundedOnDisk sends 10,000 records with 1 MiB errors through
// the service: the journal stays within twice its budget, keeps the newest
// in order, and counts each cut record as a limit hit.
func TestJournalBoundedOnDisk(t *testing.T) {
	const n = 10_000
	for _, tt := range []struct{ name, payload string }{
		{"1 MiB of ASCII", strings.Repeat("x", 1<<20)},
		{"1 MiB that JSON escapes six-fold", strings.Repeat("<\x01", 1<<19)},
		{"1 MiB of two-byte runes", strings.Repeat("é", 1<<19)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := newService(t)
			hits := limits.Total()
			for i := range n {
				s.journal(journal.Record{Polecat: "rig/cat", Op: "upload", Reason: tt.payload, Files: i, Error: tt.payload})
			}
			if got := limits.Total() - hits; got != n {
				t.Errorf("%d limit hits counted, want %d", got, n)
			}
			var sizes [2]int64
			for i, name := range []string{"journal.jsonl", "journal.jsonl.1"} {
				fi, err := os.Stat(filepath.Join(s.cfg.Dir, name))
				if err != nil {
					t.Fatal(err)
				}
				sizes[i] = fi.Size()
			}
			cur, old := sizes[0], sizes[1]
			t.Logf("after %d records: journal.jsonl %d bytes, journal.jsonl.1 %d bytes, %d in all (budget %d)", n, cur, old, cur+old, journal.Budget)
			if cur > journal.Budget || old > journal.Budget || old == 0 {
				t.Errorf("journal.jsonl %d bytes, journal.jsonl.1 %d: want each at most the budget %d, and a rotation", cur, old, journal.Budget)
			}
			recs, err := s.Journal()
			if err != nil {
				t.Fatal(err)
			}
			if len(recs) == 0 || recs[len(recs)-1].Files != n-1 {
				t.Fatalf("read %d records, the last %v; want the newest last", len(recs), recs[max(len(recs)-1, 0):])
			}
			for i, r := range recs {
				if r.Files != n-len(recs)+i {
					t.Fatalf("record %d is number %d, want %d: not the newest in order", i, r.Files, n-len(recs)+i)
				}
			}
			t.Logf("%d records kept", len(recs))
		})
	}
}

// TestServiceCarriesOldJournal upgrades a hostd whose journal.json holds
// the 1,000 records it kept, each with a 4 KiB error.
func TestServiceCarriesOldJournal(t *testing.T) {
	s := newService(t)
	var old []journal.Record
	for i := range 1000 {
		old = append(old, journal.Record{Polecat: "rig/cat", Op: "upload", Files: i, Error: strings.Repeat("e", 4<<10)})
	}
	if err := state.Save(filepath.Join(s.cfg.Dir, "journal.json"), old); err != nil {
		t.Fatal(err)
	}
	recs, err := s.Journal()
	if err != nil {
		t.Fatal(err)
	}
	s.journal(journal.Record{Polecat: "rig/cat", Op: "upload", Files: 1000})
	if recs, err = s.Journal(); err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1001 || recs[0].Files != 0 || recs[1000].Files != 1000 || len(recs[0].Error) > journal.ErrorCap {
		t.Errorf("read %d records, first %d with a %d-byte error, last %d; want the 1,000 old ones capped, then the new one",
			len(recs), recs[0].Files, len(recs[0].Error), recs[len(recs)-1].Files)
	}
	if _, err := os.Stat(filepath.Join(s.cfg.Dir, "journal.json")); !os.IsNotExist(err) {
		t.Errorf("journal.json is still there (%v)", err)
	}
}
