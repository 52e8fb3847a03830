package journal

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
)

func TestJournalConvertsOldJournal(t *testing.T) {
	oldRecs := func(from, to int, errText string) []Record {
		var recs []Record
		for i := from; i <= to; i++ {
			recs = append(recs, rec(i, errText))
		}
		return recs
	}
	encode := func(recs []Record) string {
		b, err := json.Marshal(recs)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	full := encode(oldRecs(1, 3, ""))
	tests := []struct {
		name    string
		budget  int64
		files   map[string]string
		want    []int // read after converting and appending record 1000
		wantErr string
	}{
		{name: "a journal.json is carried over as the older part", budget: 1 << 20,
			files: map[string]string{"journal.json": encode(oldRecs(1, 3, strings.Repeat("x", 1<<20)))},
			want:  []int{1, 2, 3, 1000}},
		{name: "only the newest that fit the budget are kept", budget: 10 * int64(len(lines(t, 100, 100))),
			files: map[string]string{"journal.json": encode(oldRecs(100, 199, ""))},
			want:  []int{190, 191, 192, 193, 194, 195, 196, 197, 198, 199, 1000}},
		{name: "an empty journal saved as null", budget: 1 << 20,
			files: map[string]string{"journal.json": "null\n"}, want: []int{1000}},
		{name: "a corrupt journal.json keeps the records before the damage", budget: 1 << 20,
			files: map[string]string{"journal.json": full[:len(full)-40]},
			want:  []int{1, 2, 1000}, wantErr: "corrupt after 2 records"},
		{name: "converted before a crash kept journal.json from being removed", budget: 1 << 20,
			files: map[string]string{"journal.json": full, "journal.jsonl.1": lines(t, 1, 3)},
			want:  []int{1, 2, 3, 1000}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := File{Dir: t.TempDir(), Budget: tt.budget}
			writeFiles(t, j.Dir, tt.files)
			err := j.Convert()
			if (err == nil) != (tt.wantErr == "") || err != nil && !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("Convert: %v, want an error containing %q", err, tt.wantErr)
			}
			if _, err := os.Stat(j.legacy()); !os.IsNotExist(err) {
				t.Errorf("journal.json is still there (%v)", err)
			}
			if size(t, j.older()) > tt.budget {
				t.Errorf("journal.jsonl.1 is %d bytes, over the budget %d", size(t, j.older()), tt.budget)
			}
			if err := j.Convert(); err != nil {
				t.Errorf("Convert again: %v", err)
			}
			if _, err := j.Append(rec(1000, "")); err != nil {
				t.Fatal(err)
			}
			recs, _, err := j.Read()
			if err != nil {
				t.Fatal(err)
			}
			if got := numbers(recs); !slices.Equal(got, tt.want) {
				t.Errorf("read %v, want %v", got, tt.want)
			}
			for _, r := range recs {
				if len(r.Error) > ErrorCap {
					t.Errorf("record %d's Error is %d bytes, over %d", r.Files, len(r.Error), ErrorCap)
				}
			}
		})
	}
}
