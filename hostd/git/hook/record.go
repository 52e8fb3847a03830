package hook

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
)

// Record is what the pre-receive hook did about one pushed ref
// checked out in one host worktree, for hostd to log and count and for
// push-to-checkout to act on: refused the push (GuardRefuse) or let it
// land without updating the worktree (GuardSkip), for paths.
type Record struct {
	Action   string   `json:"action"`
	Ref      string   `json:"ref"`
	Commit   string   `json:"commit"`
	Worktree string   `json:"worktree"`
	Admin    string   `json:"admin"`
	Paths    []string `json:"paths"` // the first few, each with why
	More     int      `json:"more"`  // how many more
}

// writeRecords appends recs to the file at path, one JSON line each.
func writeRecords(path string, recs []Record) error {
	if len(recs) == 0 {
		return nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("recording the host worktree's guard: %w", err)
	}
	enc := json.NewEncoder(f)
	for _, r := range recs {
		if err := enc.Encode(r); err != nil {
			f.Close()
			return fmt.Errorf("recording the host worktree's guard: %w", err)
		}
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("recording the host worktree's guard: %w", err)
	}
	return nil
}

// ReadRecords reads the records the pre-receive hook wrote to path; none
// when it wrote none.
func ReadRecords(path string) ([]Record, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the host worktree guard's records: %w", err)
	}
	defer f.Close()
	var recs []Record
	dec := json.NewDecoder(bufio.NewReader(f))
	for {
		var r Record
		err := dec.Decode(&r)
		if errors.Is(err, io.EOF) {
			return recs, nil
		}
		if err != nil {
			return recs, fmt.Errorf("reading the host worktree guard's records: %w", err)
		}
		recs = append(recs, r)
	}
}
