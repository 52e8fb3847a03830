package data

// The journal's file format.
//
// The journal is JSON lines: one record per line, as
// encoding/json writes it, in <dir>/journal.jsonl. A transfer appends its
// record with one write to the file opened with O_APPEND: nothing is read
// or rewritten. Before a record is written its string fields are capped
// (Error at errorCap bytes, the others at fieldCap), a cut one ending
// "…(N bytes cut)", so one record costs at most about 11 KiB whatever a
// polecat sent (every byte of its strings escaped six-fold). When an append would take journal.jsonl past the budget
// (journalBudget), the file is first renamed to journal.jsonl.1, replacing
// the older part: the journal never holds more than twice the budget on
// disk.
//
// Readers read journal.jsonl.1 and then journal.jsonl, oldest first, at
// most the budget's bytes of each (the newest, from its end) and at most
// as many records as honest lines could fill it with. A line that does
// not decode is skipped: the torn end of an append that a crash cut short
// (the next append starts a new line after it). Fields are capped again
// as they are read.
//
// A journal.json from before (a JSON array of the newest 1,000 records,
// rewritten whole) is converted once, on the journal's first use: its
// records, capped, become journal.jsonl.1 (the newest of them that fit the
// budget), and it is removed, so an upgrade keeps the history.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/polecat-sidecar/sidecar/hostd/api"

	"github.com/polecat-sidecar/sidecar/hostd/limits"
	"github.com/polecat-sidecar/sidecar/internal/atomicfile"
	"github.com/polecat-sidecar/sidecar/sync/merge"
)

// record is one transfer, as a journal line holds it: the service's own
// type, so that a change to the control API does not change what is on
// disk. Its JSON is the journal's format; a field renamed here would leave
// the lines written before unread (testdata/journal.jsonl is one written by
// an earlier release).
type record struct {
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

// asAPI is r as the control API shows it (hostd sync log).
func (r record) asAPI() api.SyncRecord {
	return api.SyncRecord{Time: r.Time, Polecat: r.Polecat, Op: r.Op, Reason: r.Reason, DryRun: r.DryRun,
		Files: r.Files, Bytes: r.Bytes, Applied: r.Applied, Merged: r.Merged, Conflict: r.Conflict,
		Deleted: r.Deleted, Kept: r.Kept, Duration: r.Duration, Error: r.Error}
}

// count adds one change to r's tally.
func count(r *record, action string) {
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

const (
	// journalBudget is the bytes journal.jsonl may hold before it becomes
	// journal.jsonl.1: the journal takes at most twice this on disk.
	journalBudget = 4 << 20
	// errorCap bounds a record's Error, in bytes, marker included.
	errorCap = 1 << 10
	// fieldCap bounds a record's other strings (Polecat, Op, Reason).
	fieldCap = 256
	// markerRoom is kept for "…(N bytes cut)" in a cut field.
	markerRoom = 40
)

// minLine is the shortest line an honest record takes: every record has a
// time, and its empty strings and zero numbers are the least it can hold.
var minLine = func() int {
	b, _ := json.Marshal(record{})
	return len(b) + 1
}()

// cut caps s at limit bytes, marker included, on a rune boundary; cut
// says whether it did.
func cut(s string, limit int) (capped string, cut bool) {
	if len(s) <= limit {
		return s, false
	}
	keep := limit - markerRoom
	for keep > 0 && !utf8.RuneStart(s[keep]) {
		keep--
	}
	return s[:keep] + "…(" + strconv.Itoa(len(s)-keep) + " bytes cut)", true
}

// bound caps r's string fields; cut says whether any was.
func bound(r record) (record, bool) {
	var c [4]bool
	r.Polecat, c[0] = cut(r.Polecat, fieldCap)
	r.Op, c[1] = cut(r.Op, fieldCap)
	r.Reason, c[2] = cut(r.Reason, fieldCap)
	r.Error, c[3] = cut(r.Error, errorCap)
	return r, slices.Contains(c[:], true)
}

// journalFile is the journal on disk (see the file format above). Callers
// serialise its use.
type journalFile struct {
	dir    string // where the files are
	budget int64  // bytes journal.jsonl may hold: at least one line of the longest (about 11 KiB), or that line takes a part of its own and is not read back
}

func (j journalFile) current() string { return filepath.Join(j.dir, "journal.jsonl") }
func (j journalFile) older() string   { return filepath.Join(j.dir, "journal.jsonl.1") }
func (j journalFile) legacy() string  { return filepath.Join(j.dir, "journal.json") }

// line is r, capped, as one journal line; cut says whether a field was cut.
func line(r record) (b []byte, cut bool, err error) {
	r, cut = bound(r)
	b, err = json.Marshal(r)
	if err != nil {
		return nil, cut, fmt.Errorf("encoding a journal record: %w", err)
	}
	return append(b, '\n'), cut, nil
}

// Append writes r, capped, as one line at the end of the journal, turning
// journal.jsonl into journal.jsonl.1 first when r would take it past the
// budget; cut says whether a field of r was cut.
func (j journalFile) Append(r record) (cut bool, err error) {
	b, cut, err := line(r)
	if err != nil {
		return cut, err
	}
	size, torn, err := tail(j.current())
	if err != nil {
		return cut, err
	}
	if torn {
		// A crash cut the last append short: this one starts a new line.
		b = append([]byte{'\n'}, b...)
	}
	if size > 0 && size+int64(len(b)) > j.budget {
		if err := os.Rename(j.current(), j.older()); err != nil {
			return cut, fmt.Errorf("rotating the journal: %w", err)
		}
		b = bytes.TrimPrefix(b, []byte{'\n'})
	}
	if err := os.MkdirAll(filepath.Dir(j.current()), 0o700); err != nil { // hostd's data directory, made on first use
		return cut, fmt.Errorf("creating the journal's directory: %w", err)
	}
	f, err := os.OpenFile(j.current(), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return cut, fmt.Errorf("opening the journal to append: %w", err)
	}
	_, err = f.Write(b)
	if err = errors.Join(err, f.Close()); err != nil {
		return cut, fmt.Errorf("appending to the journal %s: %w", j.current(), err)
	}
	return cut, nil
}

// tail is the size of the file at path (0 when it is missing) and whether
// its last line lacks its newline.
func tail(path string) (size int64, torn bool, err error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("opening the journal: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || fi.Size() == 0 {
		return 0, false, err
	}
	last := make([]byte, 1)
	if _, err := f.ReadAt(last, fi.Size()-1); err != nil {
		return 0, false, fmt.Errorf("reading the end of the journal %s: %w", path, err)
	}
	return fi.Size(), last[0] != '\n', nil
}

// Read lists the journal's records, oldest first; skipped is how many
// lines did not decode (a torn append) or were left out to stay within the
// budget.
func (j journalFile) Read() (recs []record, skipped int, err error) {
	for _, p := range []string{j.older(), j.current()} {
		part, n, err := j.readPart(p)
		if err != nil {
			return nil, 0, err
		}
		recs, skipped = append(recs, part...), skipped+n
	}
	return recs, skipped, nil
}

// readPart reads one file of the journal: at most the budget's bytes from
// its end, and at most as many records as honest lines fill the budget
// with, the newest.
func (j journalFile) readPart(path string) (recs []record, skipped int, err error) {
	b, partial, err := readTail(path, j.budget)
	if err != nil {
		return nil, 0, err
	}
	if partial {
		// Up to the first newline is the end of a line that began
		// before: left out.
		var dropped []byte
		dropped, b, _ = bytes.Cut(b, []byte{'\n'})
		if len(dropped) > 0 {
			skipped++
		}
	}
	most := int(j.budget) / minLine
	for len(b) > 0 {
		var l []byte
		if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
			b, l = b[:i], b[i+1:]
		} else {
			b, l = nil, b
		}
		if len(bytes.TrimSpace(l)) == 0 {
			continue
		}
		if len(recs) == most {
			skipped++
			continue
		}
		var r record
		if err := json.Unmarshal(l, &r); err != nil {
			skipped++
			continue
		}
		r, _ = bound(r)
		recs = append(recs, r)
	}
	slices.Reverse(recs)
	return recs, skipped, nil
}

// readTail reads at most limit bytes from the end of the file at path
// (nothing when it is missing), and the byte before them: partial says
// whether there is one, so that b begins with the end of a line (perhaps
// just its newline).
func readTail(path string, limit int64) (b []byte, partial bool, err error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("opening the journal: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, false, fmt.Errorf("reading the journal %s: %w", path, err)
	}
	partial = fi.Size() > limit
	var from int64
	if partial {
		from = fi.Size() - limit - 1
	}
	b, err = io.ReadAll(io.NewSectionReader(f, from, fi.Size()-from))
	if err != nil {
		return nil, false, fmt.Errorf("reading the journal %s: %w", path, err)
	}
	return b, partial, nil
}

// Convert carries a journal.json from before into journal.jsonl.1 (see the
// file format above) and removes it; without one it does nothing. A
// journal.json that stops decoding part way keeps the records before that
// point, and the error says so.
func (j journalFile) Convert() error {
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
func (j journalFile) legacyLines(r io.Reader) (lines [][]byte, kept int, bad error) {
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
		var rec record
		if err := d.Decode(&rec); err != nil {
			return lines, kept, err
		}
		b, _, err := line(rec)
		if err != nil {
			return lines, kept, err
		}
		kept++
		lines, size = append(lines, b), size+int64(len(b))
		for size > j.budget {
			lines, size = lines[1:], size-int64(len(lines[0]))
		}
	}
	return lines, kept, nil
}

func (j journalFile) removeLegacy() error {
	if err := os.Remove(j.legacy()); err != nil {
		return fmt.Errorf("removing the old journal once converted: %w", err)
	}
	return nil
}

// journal counts r and appends it to the journal.
func (s *Service) journal(r record) {
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
		out = append(out, r.asAPI())
	}
	return out, nil
}

// journalFile is the service's journal, converted from journal.json on
// first use.
func (s *Service) journalFile() journalFile {
	j := journalFile{dir: s.cfg.Dir, budget: journalBudget}
	if err := j.Convert(); err != nil {
		s.log.Error("sync: carrying the old journal over failed", "err", err)
	}
	return j
}
