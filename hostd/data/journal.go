package data

import (
	"path/filepath"
	"slices"

	"github.com/polecat-sidecar/sidecar/hostd/control"
	"github.com/polecat-sidecar/sidecar/hostd/state"
	datasync "github.com/polecat-sidecar/sidecar/sync"
)

// count adds one change to r's tally.
func count(r *control.SyncRecord, action string) {
	switch action {
	case datasync.Applied:
		r.Applied++
	case datasync.Merged:
		r.Merged++
	case datasync.Conflicted:
		r.Conflict++
	case datasync.Deleted:
		r.Deleted++
	case datasync.Kept:
		r.Kept++
	}
}

// journalSize is how many records the journal keeps.
const journalSize = 1000

func (s *Service) journalPath() string { return filepath.Join(s.cfg.Dir, "journal.json") }

// journal appends r, keeping the newest journalSize records.
func (s *Service) journal(r control.SyncRecord) {
	s.metrics.observe(r)
	if !r.DryRun {
		s.conflicts.Add(int64(r.Conflict))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var recs []control.SyncRecord
	if err := state.Load(s.journalPath(), &recs); err != nil {
		s.log.Error("sync: reading the journal failed; starting it afresh", "err", err)
		recs = nil
	}
	recs = append(recs, r)
	if len(recs) > journalSize {
		recs = slices.Clone(recs[len(recs)-journalSize:])
	}
	if err := state.Save(s.journalPath(), recs); err != nil {
		s.log.Error("sync: saving the journal failed", "err", err)
	}
}

// Journal lists the transfers, oldest first.
func (s *Service) Journal() ([]control.SyncRecord, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var recs []control.SyncRecord
	err := state.Load(s.journalPath(), &recs)
	return recs, err
}
