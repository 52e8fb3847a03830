package journal

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/polecat-sidecar/sidecar/internal/atomicfile"
)

// Convert carries a journal.json from before into journal.jsonl.1 (see the
// package doc) and removes it; without one it does nothing. A
// journal.json that stops decoding part way keeps the records before that
// point, and the error says so.
func (j File) Convert() error {
	f, err := os.Open(j.legacy())
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("opening the old journal: %w", err)
	}
	defer f.Close()
	if _, err := os.Lstat(j.older()); err == nil {
		// Converted before a crash kept it from being removed.
		return j.removeLegacy()
	}
	lines, kept, bad := j.legacyLines(f)
	if err := atomicfile.Write(j.older(), bytes.Join(lines, nil), 0o600); err != nil {
		return fmt.Errorf("converting the old journal: %w", err)
	}
	if err := j.removeLegacy(); err != nil {
		return err
	}
	if bad != nil {
		return fmt.Errorf("the old journal %s was corrupt after %d records (%w); those were kept", j.legacy(), kept, bad)
	}
	return nil
}

// legacyLines decodes journal.json one record at a time into journal
// lines, the newest within the budget; kept is how many records decoded,
// bad why the rest did not.
func (j File) legacyLines(r io.Reader) (lines [][]byte, kept int, bad error) {
	d := json.NewDecoder(r)
	t, err := d.Token()
	if err != nil || t == nil { // empty, or null: no records
		return nil, 0, err
	}
	if t != json.Delim('[') {
		return nil, 0, fmt.Errorf("not a list of records but %v", t)
	}
	var size int64
	for d.More() {
		var rec Record
		if err := d.Decode(&rec); err != nil {
			return lines, kept, err
		}
		b, _, err := line(rec)
		if err != nil {
			return lines, kept, err
		}
		kept++
		lines, size = append(lines, b), size+int64(len(b))
		for size > j.Budget {
			lines, size = lines[1:], size-int64(len(lines[0]))
		}
	}
	return lines, kept, nil
}

func (j File) removeLegacy() error {
	if err := os.Remove(j.legacy()); err != nil {
		return fmt.Errorf("removing the old journal once converted: %w", err)
	}
	return nil
}
