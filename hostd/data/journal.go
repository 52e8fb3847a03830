package data

import (
	"github.com/polecat-sidecar/sidecar/hostd/api"
	"github.com/polecat-sidecar/sidecar/hostd/data/journal"
	"github.com/polecat-sidecar/sidecar/hostd/limits"
	"github.com/polecat-sidecar/sidecar/sync/merge"
)

// count adds one change to r's tally.
func count(r *journal.Record, action string) {
	switch action {
	case merge.Applied:
		r.Applied++
	case merge.Merged:
		r.Merged++
	case merge.Conflicted:
		r.Conflict++
	case merge.Deleted:
		r.Deleted++
	case merge.Kept:
		r.Kept++
	}
}

// journal counts r and appends it to the journal.
func (s *Service) journal(r journal.Record) {
	s.metrics.observe(r)
	if !r.DryRun {
		s.conflicts.Add(int64(r.Conflict))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	j := s.journalFile()
	cut, err := j.Append(r)
	if cut {
		limits.Hit(limits.SyncJournal)
	}
	if err != nil {
		s.log.Error("sync: appending to the journal failed", "err", err)
	}
}

// Journal lists the transfers, oldest first, as the control API shows
// them: the newest that fit in twice the journal's budget.
func (s *Service) Journal() ([]api.SyncRecord, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	recs, skipped, err := s.journalFile().Read()
	if skipped > 0 {
		s.log.Warn("sync: journal lines left out (torn by a crash, or over the budget)", "lines", skipped)
	}
	if err != nil {
		return nil, err
	}
	var out []api.SyncRecord
	for _, r := range recs {
		out = append(out, r.AsAPI())
	}
	return out, nil
}

// journalFile is the service's journal, converted from journal.json on
// first use.
func (s *Service) journalFile() journal.File {
	j := journal.File{Dir: s.cfg.Dir, Budget: journal.Budget}
	if err := j.Convert(); err != nil {
		s.log.Error("sync: carrying the old journal over failed", "err", err)
	}
	return j
}
