// Package journal is the data channel's journal on disk: one JSON line a
// transfer in <dir>/journal.jsonl, appended with one write to the file
// opened with O_APPEND (nothing is read or rewritten), its strings capped
// first (Error at ErrorCap bytes, the others at fieldCap, a cut one ending
// "…(N bytes cut)"), so a line costs at most about 11 KiB whatever a
// polecat sent. An append that would take journal.jsonl past the budget
// renames it to journal.jsonl.1 first, replacing the older part: the
// journal never holds more than twice the budget on disk.
//
// Readers read journal.jsonl.1 and then journal.jsonl, oldest first, at
// most the budget's bytes of each (the newest, from its end) and at most
// as many records as honest lines could fill it with; a line that does not
// decode (the torn end of an append a crash cut short) is skipped, and
// fields are capped again as they are read. A journal.json from before (a
// JSON array rewritten whole) is converted once into journal.jsonl.1.
package journal

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
)

// Record is one transfer, as a journal line holds it: the service's own
// type, so that a change to the control API does not change what is on
// disk. Its JSON is the journal's format; a field renamed here would leave
// the lines written before unread (testdata/journal.jsonl is one written by
// an earlier release).
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

// AsAPI is r as the control API shows it (hostd sync log).
func (r Record) AsAPI() api.SyncRecord {
	return api.SyncRecord{Time: r.Time, Polecat: r.Polecat, Op: r.Op, Reason: r.Reason, DryRun: r.DryRun,
		Files: r.Files, Bytes: r.Bytes, Applied: r.Applied, Merged: r.Merged, Conflict: r.Conflict,
		Deleted: r.Deleted, Kept: r.Kept, Duration: r.Duration, Error: r.Error}
}

const (
	// Budget is the bytes journal.jsonl may hold before it becomes
	// journal.jsonl.1: the journal takes at most twice this on disk.
	Budget = 4 << 20
	// ErrorCap bounds a record's Error, in bytes, marker included.
	ErrorCap = 1 << 10
	// fieldCap bounds a record's other strings (Polecat, Op, Reason).
	fieldCap = 256
	// markerRoom is kept for "…(N bytes cut)" in a cut field.
	markerRoom = 40
)

// minLine is the shortest line an honest record takes: every record has a
// time, and its empty strings and zero numbers are the least it can hold.
var minLine = func() int {
	b, _ := json.Marshal(Record{})
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
func bound(r Record) (Record, bool) {
	var c [4]bool
	r.Polecat, c[0] = cut(r.Polecat, fieldCap)
	r.Op, c[1] = cut(r.Op, fieldCap)
	r.Reason, c[2] = cut(r.Reason, fieldCap)
	r.Error, c[3] = cut(r.Error, ErrorCap)
	return r, slices.Contains(c[:], true)
}

// File is the journal on disk (see the package doc). Callers
// serialise its use.
type File struct {
	Dir    string // where the files are
	Budget int64  // bytes journal.jsonl may hold: at least one line of the longest (about 11 KiB), or that line takes a part of its own and is not read back
}

func (j File) current() string { return filepath.Join(j.Dir, "journal.jsonl") }
func (j File) older() string   { return filepath.Join(j.Dir, "journal.jsonl.1") }
func (j File) legacy() string  { return filepath.Join(j.Dir, "journal.json") }

// line is r, capped, as one journal line; cut says whether a field was cut.
func line(r Record) (b []byte, cut bool, err error) {
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
func (j File) Append(r Record) (cut bool, err error) {
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
	if size > 0 && size+int64(len(b)) > j.Budget {
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
func (j File) Read() (recs []Record, skipped int, err error) {
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
func (j File) readPart(path string) (recs []Record, skipped int, err error) {
	b, partial, err := readTail(path, j.Budget)
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
	most := int(j.Budget) / minLine
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
		var r Record
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
