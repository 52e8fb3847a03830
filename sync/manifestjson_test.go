package sync

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"reflect"
	"testing"
	"time"
)

// plainManifest is Manifest without its MarshalJSON: what encoding/json
// writes by reflection.
type plainManifest Manifest

// TestManifestJSON: MarshalJSON writes what encoding/json's reflection
// writes, byte for byte, and what it writes decodes to the same manifest.
func TestManifestJSON(t *testing.T) {
	at := time.Date(2026, 11, 25, 17, 3, 4, 500, time.UTC)
	tests := []struct {
		name string
		m    Manifest
	}{
		{"empty", Manifest{Version: 1}},
		{"no entries, a list", Manifest{Version: 1, Entries: []Entry{}}},
		{"every field", Manifest{Version: 1, Entries: []Entry{
			{Path: "results/a.txt", Type: TypeFile, Mode: 0o644, MTime: at, Size: 12, SHA256: HashBytes([]byte("x")), Unchanged: true},
			{Path: "results", Type: TypeDir, Mode: 0o755, MTime: at},
			{Path: "results/l", Type: TypeSymlink, Mode: 0o777, Target: "a.txt"},
		}, Skipped: []string{"results/out", "results/dev"}}},
		{"strings needing escapes", Manifest{Version: 1, Entries: []Entry{
			{Path: `results/<a&b>"q"\.txt`, Type: TypeFile, Mode: 0o600},
			{Path: "results/caf\u00e9\u2028\x01\x7f.txt", Type: TypeFile},
			{Path: "results/bad\xff.txt", Type: TypeFile},
		}}},
		{"a zone and a far year", Manifest{Version: 1, Entries: []Entry{
			{Path: "a", Type: TypeFile, MTime: time.Date(9999, 1, 2, 3, 4, 5, 6, time.FixedZone("x", -3*3600))},
			{Path: "b", Type: TypeFile, MTime: time.Unix(0, 0), Size: -1},
		}}},
		{"high mode bits", Manifest{Version: 7, Entries: []Entry{{Path: "a", Mode: fs.ModeDir | fs.ModeSetuid | 0o777}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := json.Marshal(tt.m)
			if err != nil {
				t.Fatal(err)
			}
			want, err := json.Marshal(plainManifest(tt.m))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("MarshalJSON:\n%s\nencoding/json:\n%s", got, want)
			}
			var back Manifest
			if err := json.Unmarshal(got, &back); err != nil {
				t.Fatal(err)
			}
			for i := range back.Entries {
				fast, err := decodeEntry(mustEntryJSON(t, tt.m.Entries[i]))
				if err != nil || !reflect.DeepEqual(fast, back.Entries[i]) {
					t.Errorf("entry %d: decodeEntry %+v, %v; encoding/json %+v", i, fast, err, back.Entries[i])
				}
			}
		})
	}
	// A year encoding/json cannot write is an error here too.
	if _, err := json.Marshal(Manifest{Entries: []Entry{{MTime: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}}}); err == nil {
		t.Error("year 10000 encoded")
	}
}

// TestDecodeEntryFast: the forms decodeEntryFast takes, and those it
// leaves to encoding/json; either way decodeEntry gives encoding/json's
// entry, or an error where it gives one.
func TestDecodeEntryFast(t *testing.T) {
	tests := []struct {
		name string
		raw  string
		fast bool
	}{
		{"as written", `{"path":"results/a","type":"file","mode":420,"mtime":"2026-11-25T17:03:04.0000005Z","size":12,"sha256":"ab","unchanged":true}`, true},
		{"spaces", ` { "path" : "a" , "type":"dir" } `, true},
		{"empty", `{}`, true},
		{"unchanged false", `{"unchanged":false}`, true},
		{"a symlink", `{"path":"l","type":"symlink","mode":511,"target":"../x"}`, true},
		{"an escape", `{"path":"a\"b"}`, false},
		{"a key in another case", `{"Path":"a"}`, false},
		{"an unknown key", `{"path":"a","owner":"root"}`, false},
		{"a key twice", `{"path":"a","path":"b"}`, false},
		{"null", `{"path":null}`, false},
		{"a negative size", `{"size":-1}`, false},
		{"a size as a float", `{"size":1.0}`, false},
		{"a size in exponent form", `{"size":1e3}`, false},
		{"a mode too big", `{"mode":4294967296}`, false},
		{"a size too big", `{"size":9223372036854775808}`, false},
		{"a time not RFC 3339", `{"mtime":"yesterday"}`, false},
		{"a string for a number", `{"mode":"420"}`, false},
		{"a number for a string", `{"path":1}`, false},
		{"not an object", `[]`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ok := decodeEntryFast([]byte(tt.raw))
			if ok != tt.fast {
				t.Errorf("decodeEntryFast ok %v, want %v", ok, tt.fast)
			}
			checkDecodeEntry(t, []byte(tt.raw))
		})
	}
}

// checkDecodeEntry holds decodeEntry to encoding/json refusing unknown
// fields: the same entry, or an error from both.
func checkDecodeEntry(t *testing.T, raw []byte) {
	t.Helper()
	var want Entry
	d := json.NewDecoder(bytes.NewReader(raw))
	d.DisallowUnknownFields()
	werr := d.Decode(&want)
	got, err := decodeEntry(raw)
	if (err != nil) != (werr != nil) || (err == nil && !reflect.DeepEqual(got, want)) {
		t.Errorf("%s: decodeEntry %+v, %v; encoding/json %+v, %v", raw, got, err, want, werr)
	}
	if fast, ok := decodeEntryFast(raw); ok && (werr != nil || !reflect.DeepEqual(fast, want)) {
		t.Errorf("%s: decodeEntryFast took %+v; encoding/json %+v, %v", raw, fast, want, werr)
	}
}

func mustEntryJSON(t *testing.T, e Entry) []byte {
	t.Helper()
	b, err := e.appendJSON(nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// FuzzEntryJSON: an entry of any fields encodes as encoding/json encodes
// it, and decodes back as encoding/json decodes it.
func FuzzEntryJSON(f *testing.F) {
	f.Add("results/a.txt", TypeFile, uint32(0o644), int64(1700000000), int64(5), int64(12), "ab", "", true)
	f.Add("a<b>\"", "dir", uint32(1<<31), int64(-1), int64(0), int64(-3), "", "t\x00", false)
	f.Fuzz(func(t *testing.T, path, typ string, mode uint32, sec, nsec, size int64, sha, target string, unchanged bool) {
		e := Entry{Path: path, Type: typ, Mode: fs.FileMode(mode), Size: size, SHA256: sha, Target: target, Unchanged: unchanged}
		if sec != 0 {
			e.MTime = time.Unix(sec, nsec%1e9)
		}
		m := Manifest{Version: 1, Entries: []Entry{e}, Skipped: []string{target}}
		got, gerr := json.Marshal(m)
		want, werr := json.Marshal(plainManifest(m))
		if (gerr != nil) != (werr != nil) || !bytes.Equal(got, want) {
			t.Fatalf("MarshalJSON %s, %v; encoding/json %s, %v", got, gerr, want, werr)
		}
		if gerr == nil {
			checkDecodeEntry(t, mustEntryJSON(t, e))
		}
	})
}

// FuzzDecodeEntryFast: whatever decodeEntryFast takes, encoding/json
// takes as the same entry.
func FuzzDecodeEntryFast(f *testing.F) {
	f.Add([]byte(`{"path":"results/a","type":"file","mode":420,"mtime":"2026-11-25T17:03:04Z","size":12,"sha256":"ab","unchanged":true}`))
	f.Add([]byte(`{"path":"a","path":"b"}`))
	f.Add([]byte(`{"mode":01}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		checkDecodeEntry(t, raw)
	})
}
