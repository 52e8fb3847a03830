package journal

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/polecat-sidecar/sidecar/hostd/api"
)

// rec is the i-th test record, with errText as its Error.
func rec(i int, errText string) Record {
	return Record{Time: time.Unix(1_800_000_000+int64(i), 0).UTC(), Polecat: "rig/cat", Op: "upload", Reason: "checkpoint",
		Files: i, Bytes: 100, Duration: time.Second, Error: errText}
}

// lines is the records numbered from..to as journal lines.
func lines(t testing.TB, from, to int) string {
	var b strings.Builder
	for i := from; i <= to; i++ {
		l, _, err := line(rec(i, ""))
		if err != nil {
			t.Fatal(err)
		}
		b.Write(l)
	}
	return b.String()
}

// numbers is each record's Files, the test records' number.
func numbers(recs []Record) []int {
	n := make([]int, len(recs))
	for i, r := range recs {
		n[i] = r.Files
	}
	return n
}

func size(t testing.TB, path string) int64 {
	fi, err := os.Stat(path)
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

func writeFiles(t testing.TB, dir string, files map[string]string) {
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// maxLine is the longest line a record can take once capped: the longest
// time and numbers, and every byte of every string escaped six-fold
// (\u00XX).
var maxLine = func() int {
	b, err := json.Marshal(Record{Time: time.Date(9999, 12, 31, 23, 59, 59, 999_999_999, time.FixedZone("", -(23*3600+59*60))),
		Polecat: "p", Op: "o", Reason: "r", DryRun: true, Files: math.MinInt, Bytes: math.MinInt64, Applied: math.MinInt, Merged: math.MinInt,
		Conflict: math.MinInt, Deleted: math.MinInt, Kept: math.MinInt, Duration: math.MinInt64, Error: "e"})
	if err != nil {
		panic(err)
	}
	return len(b) + 1 + 6*(ErrorCap+3*fieldCap)
}()

// TestJournalLineBound: a record of hostile strings takes at most maxLine,
// so the real budget holds hundreds of them.
func TestJournalLineBound(t *testing.T) {
	for _, tt := range []struct{ name, s string }{
		{"control bytes", strings.Repeat("\x01", 1<<20)},
		{"HTML characters", strings.Repeat("<>&", 1<<18)},
		{"invalid UTF-8", strings.Repeat("\xff", 1<<20)},
		{"line separators", strings.Repeat("\u2028", 1<<18)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			l, cut, err := line(Record{Polecat: tt.s, Op: tt.s, Reason: tt.s, Error: tt.s, Files: math.MaxInt})
			if err != nil || !cut || len(l) > maxLine {
				t.Errorf("a %d-byte line (cut %v, %v), want at most maxLine %d", len(l), cut, err, maxLine)
			}
		})
	}
	if Budget < 100*maxLine {
		t.Errorf("Budget %d holds fewer than 100 lines of %d bytes", Budget, maxLine)
	}
}

func TestJournalFile(t *testing.T) {
	mib := strings.Repeat("x", 1<<20)
	lineLen := int64(len(lines(t, 1, 1))) // records 1 to 9 all take this
	tests := []struct {
		name        string
		budget      int64
		files       map[string]string // before the appends
		appends     []Record
		want        []int // the records read, by number
		wantSkipped int
		wantCut     int // appends that had a field cut
		check       func(t *testing.T, recs []Record)
	}{
		{name: "appended records read back in order", budget: 1 << 20,
			appends: []Record{rec(1, ""), rec(2, "refused"), rec(3, ""), rec(4, ""), rec(5, "")},
			want:    []int{1, 2, 3, 4, 5}},
		{name: "a huge Error is capped at ErrorCap, marked as cut", budget: 1 << 20,
			appends: []Record{rec(1, mib), rec(2, "")}, want: []int{1, 2}, wantCut: 1,
			check: func(t *testing.T, recs []Record) {
				kept := ErrorCap - markerRoom
				want := mib[:kept] + "…(" + strconv.Itoa(len(mib)-kept) + " bytes cut)"
				if recs[0].Error != want {
					t.Errorf("Error is %d bytes ending %q, want %d ending %q", len(recs[0].Error), recs[0].Error[kept:], len(want), want[kept:])
				}
				if len(recs[0].Error) > ErrorCap {
					t.Errorf("Error is %d bytes, over %d", len(recs[0].Error), ErrorCap)
				}
			}},
		{name: "every string field is capped on a rune boundary", budget: 1 << 20,
			appends: []Record{{Files: 1, Polecat: mib, Op: mib, Reason: strings.Repeat("é", 1<<19), Error: strings.Repeat("€", 1<<18)}},
			want:    []int{1}, wantCut: 1,
			check: func(t *testing.T, recs []Record) {
				r := recs[0]
				for _, f := range []struct {
					name, v string
					cap     int
				}{{"Polecat", r.Polecat, fieldCap}, {"Op", r.Op, fieldCap}, {"Reason", r.Reason, fieldCap}, {"Error", r.Error, ErrorCap}} {
					if len(f.v) > f.cap || !strings.Contains(f.v, " bytes cut)") || !utf8.ValidString(f.v) {
						t.Errorf("%s is %d bytes (cap %d), valid UTF-8 %v: %q", f.name, len(f.v), f.cap, utf8.ValidString(f.v), f.v)
					}
				}
			}},
		{name: "a torn last line is skipped", budget: 1 << 20,
			files: map[string]string{"journal.jsonl": lines(t, 1, 2) + `{"time":"2027-01-15T08:00:00Z","polec`},
			want:  []int{1, 2}, wantSkipped: 1},
		{name: "an append after a torn line starts a new line", budget: 1 << 20,
			files:   map[string]string{"journal.jsonl": lines(t, 1, 2) + `{"time":"2027-01-15T08:00:00Z","polec`},
			appends: []Record{rec(3, ""), rec(4, "")},
			want:    []int{1, 2, 3, 4}, wantSkipped: 1},
		{name: "lines that do not decode are skipped", budget: 1 << 20,
			files: map[string]string{"journal.jsonl": lines(t, 1, 1) + "not json\n\n[1,2]\n" + lines(t, 2, 2)},
			want:  []int{1, 2}, wantSkipped: 2},
		{name: "the older part is read first", budget: 1 << 20,
			files:   map[string]string{"journal.jsonl.1": lines(t, 1, 2), "journal.jsonl": lines(t, 3, 3)},
			appends: []Record{rec(4, "")},
			want:    []int{1, 2, 3, 4}},
		{name: "an append past the budget rotates, replacing the older part", budget: 3 * lineLen,
			appends: []Record{rec(1, ""), rec(2, ""), rec(3, ""), rec(4, ""), rec(5, ""), rec(6, ""), rec(7, "")},
			want:    []int{4, 5, 6, 7}},
		{name: "a part over the budget is read from its end", budget: 3*lineLen + 5,
			files: map[string]string{"journal.jsonl": lines(t, 1, 9)},
			want:  []int{7, 8, 9}, wantSkipped: 1},
		{name: "a part holds at most as many records as honest lines fill the budget with", budget: int64(10 * minLine),
			files: map[string]string{"journal.jsonl": strings.Repeat("{}\n", 100)},
			want:  []int{0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, wantSkipped: 90},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := File{Dir: t.TempDir(), Budget: tt.budget}
			writeFiles(t, j.Dir, tt.files)
			cuts := 0
			for _, r := range tt.appends {
				cut, err := j.Append(r)
				if err != nil {
					t.Fatal(err)
				}
				if cut {
					cuts++
				}
			}
			recs, skipped, err := j.Read()
			if err != nil {
				t.Fatal(err)
			}
			if got := numbers(recs); !slices.Equal(got, tt.want) || skipped != tt.wantSkipped || cuts != tt.wantCut {
				t.Errorf("read %v (skipped %d, cut %d), want %v (skipped %d, cut %d)", got, skipped, cuts, tt.want, tt.wantSkipped, tt.wantCut)
			}
			for _, p := range []string{j.current(), j.older()} {
				if tt.files[filepath.Base(p)] == "" && size(t, p) > tt.budget {
					t.Errorf("%s is %d bytes, over the budget %d", filepath.Base(p), size(t, p), tt.budget)
				}
			}
			if tt.check != nil && len(recs) == len(tt.want) {
				tt.check(t, recs)
			}
		})
	}
}

// TestReadsTodaysJournal: testdata/journal.jsonl was written by the
// release before the journal had a record type of its own; its records
// read and shown (AsAPI) field for field, and each encodes to the line it
// was read from.
func TestReadsTodaysJournal(t *testing.T) {
	fixture, err := os.ReadFile(filepath.Join("testdata", "journal.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	j := File{Dir: t.TempDir(), Budget: Budget}
	if err := os.WriteFile(j.current(), fixture, 0o600); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 28, 19, 0, 0, 0, time.UTC)
	// The third record's error was 2,009 bytes, cut as it was written.
	long := "refused: " + strings.Repeat("x", 2000)
	cutError := long[:ErrorCap-markerRoom] + "…(" + strconv.Itoa(len(long)-(ErrorCap-markerRoom)) + " bytes cut)"
	want := []api.SyncRecord{
		{Time: at, Polecat: "gastown/furiosa", Op: "upload", Reason: "checkpoint", Files: 12, Bytes: 34567, Applied: 10, Merged: 1, Conflict: 1,
			Duration: 1500 * time.Millisecond},
		{Time: at.Add(time.Minute), Polecat: "gastown/furiosa", Op: "pull", Reason: "operator", DryRun: true, Files: 3, Bytes: 900, Deleted: 2, Kept: 1,
			Duration: 20 * time.Millisecond},
		{Time: at.Add(2 * time.Minute), Polecat: "gastown/nux", Op: "push", Reason: "connect", Duration: time.Second, Error: cutError},
	}
	recs, skipped, err := j.Read()
	if err != nil || skipped != 0 {
		t.Fatalf("reading today's journal: %v, %d lines skipped", err, skipped)
	}
	var got []api.SyncRecord
	for _, r := range recs {
		got = append(got, r.AsAPI())
	}
	if len(got) != len(want) {
		t.Fatalf("read %d records from today's journal, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("record %d of today's journal: %+v, want %+v", i, got[i], want[i])
		}
	}
	var written strings.Builder
	for _, r := range recs {
		l, _, err := line(r)
		if err != nil {
			t.Fatal(err)
		}
		written.Write(l)
	}
	if written.String() != string(fixture) {
		t.Errorf("today's journal written again:\n%s\nwant\n%s", written.String(), fixture)
	}
}

// FuzzJournalRead writes hostile bytes as the journal's three files: the
// conversion, read and append never panic, and what is read stays within
// what the budget implies.
func FuzzJournalRead(f *testing.F) {
	f.Add([]byte(lines(f, 1, 3)), []byte(lines(f, 4, 5)+`{"time":"20`), []byte(nil))
	f.Add([]byte(strings.Repeat("{}\n", 500)), []byte("\n\n\xff{\"error\":\"\\u0000\"}\n"), []byte(`[{"error":"x"},{"op":`))
	f.Add([]byte(nil), []byte(nil), []byte(`[{"time":"2027-01-15T08:00:00Z","polecat":"a/b","files":1}]`))
	f.Add([]byte(`{"error":"`+strings.Repeat("\\u003c", 2000)+`"}`), []byte(nil), []byte("null"))
	f.Add([]byte(lines(f, 1, 200)), []byte(strings.Repeat("{}\n", 5000)), []byte(nil))
	budget := int64(maxLine) // the least a budget may be: one line of the most a record takes
	f.Fuzz(func(t *testing.T, current, older, legacy []byte) {
		j := File{Dir: t.TempDir(), Budget: budget}
		for _, file := range []struct {
			path string
			b    []byte
		}{{j.current(), current}, {j.older(), older}, {j.legacy(), legacy}} {
			if len(file.b) > 0 {
				if err := os.WriteFile(file.path, file.b, 0o600); err != nil {
					t.Fatal(err)
				}
			}
		}
		_ = j.Convert()
		if len(older) == 0 && size(t, j.older()) > budget {
			t.Fatalf("converted into %d bytes, over the budget %d", size(t, j.older()), budget)
		}
		recs, _, err := j.Read()
		if err != nil {
			t.Fatal(err)
		}
		if most := 2 * int(budget) / minLine; len(recs) > most {
			t.Fatalf("read %d records, more than %d", len(recs), most)
		}
		total := 0
		for _, r := range recs {
			if len(r.Polecat) > fieldCap || len(r.Op) > fieldCap || len(r.Reason) > fieldCap || len(r.Error) > ErrorCap {
				t.Fatalf("a field over its cap: %+v", r)
			}
			total += len(r.Polecat) + len(r.Op) + len(r.Reason) + len(r.Error)
		}
		if total > 2*int(budget) {
			t.Fatalf("read %d bytes of strings, more than twice the budget %d", total, budget)
		}
		r := rec(1, string(current))
		l, _, err := line(r)
		if err != nil || len(l) > maxLine {
			t.Fatalf("a %d-byte line (%v), over maxLine %d", len(l), err, maxLine)
		}
		if _, err := j.Append(r); err != nil {
			t.Fatal(err)
		}
		if got := size(t, j.current()); got > budget {
			t.Fatalf("journal.jsonl is %d bytes after an append, over the budget %d", got, budget)
		}
		if recs, _, err = j.Read(); err != nil || len(recs) == 0 || !recs[len(recs)-1].Time.Equal(rec(1, "").Time) {
			t.Fatalf("the appended record is not the last read (%v): %d records", err, len(recs))
		}
	})
}

// TestJournalMakesItsDirectory: the first record, before hostd's data
// directory exists (a transfer refused before anything was stored), is
// kept, not lost with an error.
func TestJournalMakesItsDirectory(t *testing.T) {
	j := File{Dir: filepath.Join(t.TempDir(), "not", "yet"), Budget: Budget}
	if _, err := j.Append(Record{Polecat: "gastown/furiosa", Op: "upload", Error: "refused"}); err != nil {
		t.Fatal(err)
	}
	recs, _, err := j.Read()
	if err != nil || len(recs) != 1 {
		t.Fatalf("read back %v, %v", recs, err)
	}
}
