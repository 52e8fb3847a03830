package data

import (
	"path/filepath"
	"slices"
	"time"

	"github.com/polecat-sidecar/sidecar/hostd/state"
	datasync "github.com/polecat-sidecar/sidecar/sync"
)

// Record is one transfer in the journal hostd sync log shows.
type Record struct {
	Time     time.Time     `json:"time"`
	Polecat  string        `json:"polecat"`
	Op       string        `json:"op"`
	Reason   string        `json:"reason,omitempty"`
	DryRun   bool          `json:"dry_run,omitempty"`
	Files    int           `json:"files"`
	Bytes    int64         `json:"bytes"`
	Applied  int           `json:"applied,omitempty"`
	Merged   int           `json:"merged,omitempty"`
	Conflict int           `json:"conflicted,omitempty"`
	Deleted  int           `json:"deleted,omitempty"`
	Kept     int           `json:"kept,omitempty"`
	Duration time.Duration `json:"duration"`
	Error    string        `json:"error,omitempty"`
}

func (r *Record) count(action string) {
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
func (s *Service) journal(r Record) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var recs []Record
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
func (s *Service) Journal() ([]Record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var recs []Record
	err := state.Load(s.journalPath(), &recs)
	return recs, err
}
