package nudge

import (
	"cmp"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/polecat-sidecar/sidecar/internal/atomicfile"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// record is what the agent keeps of one nudge: its outcome, or that it was
// being typed when the agent stopped.
type record struct {
	Result wire.NudgeResult `json:"result"`
	Typing bool             `json:"typing,omitempty"`
	// Seq orders the records, oldest first: the outcomes' times are this
	// machine's clock, which a step back would make the newest look
	// oldest (and evict it, so a retried nudge could be typed again).
	Seq uint64 `json:"seq,omitempty"`
}

// maxRecords bounds the outcomes kept: far more than hostd's queue holds.
const maxRecords = 1000

func (s *Service) statePath() string { return filepath.Join(s.cfg.StateDir, "nudges.json") }

// loadSeen reads the records a previous agent persisted; records it
// cannot read are said and dropped, so that a nudge hostd retries may be
// typed again.
func (s *Service) loadSeen() {
	b, err := os.ReadFile(s.statePath())
	if err == nil {
		err = json.Unmarshal(b, &s.seen)
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		s.seen = map[string]record{}
		s.cfg.Logger.Warn("nudge: the records of delivered nudges cannot be read; starting without them, so a nudge hostd retries may be typed again", "path", s.statePath(), "err", err)
	}
	for _, r := range s.seen {
		s.seq = max(s.seq, r.Seq)
	}
}

func (s *Service) lookup(id string) (record, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.seen[id]
	return r, ok
}

// remember persists a nudge's record, keeping the newest maxRecords.
func (s *Service) remember(id string, res wire.NudgeResult, typing bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if res.At.IsZero() {
		res.At = time.Now()
	}
	s.seq++
	s.seen[id] = record{Result: res, Typing: typing, Seq: s.seq}
	if len(s.seen) > maxRecords {
		ids := make([]string, 0, len(s.seen))
		for k := range s.seen {
			ids = append(ids, k)
		}
		slices.SortFunc(ids, func(a, b string) int { return cmp.Compare(s.seen[a].Seq, s.seen[b].Seq) })
		for _, k := range ids[:len(ids)-maxRecords] {
			delete(s.seen, k)
		}
	}
	b, _ := json.Marshal(s.seen)
	if err := atomicfile.Write(s.statePath(), b, 0o600); err != nil {
		s.cfg.Logger.Warn("nudge: could not record a nudge's outcome; a restarted agent could type it again", "id", id, "err", err)
	}
}
