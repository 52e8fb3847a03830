package sync

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/polecat-sidecar/sidecar/internal/jsonscan"
)

// TestManifestJSON: AppendJSON writes what encoding/json writes, byte for
// byte, and what it writes decodes to the same manifest.
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
			got, err := tt.m.AppendJSON(nil)
			if err != nil {
				t.Fatal(err)
			}
			want, err := json.Marshal(tt.m)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("AppendJSON:\n%s\nencoding/json:\n%s", got, want)
			}
			var back Manifest
			if err := json.Unmarshal(got, &back); err != nil {
				t.Fatal(err)
			}
			for i := range back.Entries {
				fast, ok := decodeEntryFast(mustEntryJSON(t, tt.m.Entries[i]))
				if want := back.Entries[i]; ok && !reflect.DeepEqual(fast, want) {
					t.Errorf("entry %d: decodeEntryFast %+v, %v; encoding/json %+v", i, fast, ok, want)
				}
			}
		})
	}
	// A year encoding/json cannot write is an error here too.
	far := Manifest{Entries: []Entry{{MTime: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}}}
	if _, err := far.AppendJSON(nil); err == nil {
		t.Error("year 10000 encoded")
	}
}

// TestDecodeEntryFast: the forms decodeEntryFast takes, each as
// encoding/json takes it, and those it leaves to encoding/json.
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

// checkDecodeEntry holds decodeEntryFast to encoding/json refusing
// unknown fields: whatever it takes, encoding/json takes as the same
// entry.
func checkDecodeEntry(t *testing.T, raw []byte) {
	t.Helper()
	var want Entry
	d := json.NewDecoder(bytes.NewReader(raw))
	d.DisallowUnknownFields()
	werr := d.Decode(&want)
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
		got, gerr := m.AppendJSON(nil)
		want, werr := json.Marshal(m)
		if (gerr != nil) != (werr != nil) || (gerr == nil && !bytes.Equal(got, want)) {
			t.Fatalf("AppendJSON %s, %v; encoding/json %s, %v", got, gerr, want, werr)
		}
		if gerr == nil {
			checkDecodeEntry(t, mustEntryJSON(t, e))
			checkReadManifest(t, got, 0)
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

// TestReadManifestFast: what AppendJSON writes is read in one pass
// (decodeManifestFast takes it), and ReadManifest's verdict on any
// manifest is encoding/json's: the same manifest, or an error from both.
func TestReadManifestFast(t *testing.T) {
	var m Manifest
	m.Version = ManifestVersion
	for i := range 50 {
		m.Entries = append(m.Entries, Entry{Path: fmt.Sprintf("results/f%02d.txt", i), Type: TypeFile, Mode: 0o644,
			MTime: time.Unix(1700000000, 0).UTC(), Size: int64(i), SHA256: HashBytes([]byte{byte(i)}), Unchanged: i%2 == 0})
	}
	m.Skipped = []string{"results/dev"}
	ours, err := m.AppendJSON(nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := decodeManifestFast(ours, 0); !ok {
		t.Fatalf("decodeManifestFast left AppendJSON's manifest to encoding/json: %s", ours)
	}
	sha := HashBytes(nil)
	tests := []struct {
		name  string
		in    string
		max   int
		fast  bool
		limit bool
	}{
		{"ours", string(ours), 0, true, false},
		{"ours, at the entry limit", string(ours), 51, true, false},
		{"over the entry limit", string(ours), 50, false, true},
		{"a trailing comma at the entry limit", `{"version":1,"entries":[{"path":"a","type":"dir"},]}`, 1, false, true},
		{"over the entry limit with skipped paths", `{"version":1,"entries":[{"path":"a","type":"dir"}],"skipped":["b"]}`, 1, false, true},
		{"empty tree", `{"version":1,"entries":null}`, 0, true, false},
		{"no entries key", `{"version":1}`, 0, true, false},
		{"skipped null", `{"version":1,"entries":[],"skipped":null}`, 0, true, false},
		{"another version", `{"version":2,"entries":[]}`, 0, false, false},
		{"no version", `{"entries":[]}`, 0, false, false},
		{"entries twice", `{"version":1,"entries":[],"entries":[]}`, 0, false, false},
		{"a path twice", `{"version":1,"entries":[{"path":"a","type":"dir"},{"path":"a","type":"dir"}]}`, 0, false, false},
		{"a path leaving the root", `{"version":1,"entries":[{"path":"../a","type":"dir"}]}`, 0, false, false},
		{"a bad hash", `{"version":1,"entries":[{"path":"a","type":"file","sha256":"zz"}]}`, 0, false, false},
		{"a good file", `{"version":1,"entries":[{"path":"a","type":"file","size":0,"sha256":"` + sha + `"}]}`, 0, true, false},
		{"an unknown key", `{"version":1,"entries":[],"owner":"x"}`, 0, false, false},
		{"an escaped path", `{"version":1,"entries":[{"path":"\u0061","type":"dir"}]}`, 0, false, false},
		{"data after it", `{"version":1,"entries":[]} {}`, 0, false, false},
		{"cut short", `{"version":1,"entries":[`, 0, false, false},
		{"a bad skipped path", `{"version":1,"entries":[],"skipped":["/etc"]}`, 0, false, false},
		{"longer than it may be held whole: streamed", `{"version":1,"entries":[{"path":"` + strings.Repeat("a", 900) + `","type":"dir"}]}`, 2, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, ok, err := decodeManifestFast([]byte(tt.in), tt.max); ok != tt.fast || err != nil != tt.limit {
				t.Errorf("decodeManifestFast ok %v, %v; want ok %v, refused at the limit %v", ok, err, tt.fast, tt.limit)
			}
			checkReadManifest(t, []byte(tt.in), tt.max)
		})
	}
}

// checkReadManifest holds ReadManifest to readManifestJSON.
func checkReadManifest(t *testing.T, b []byte, max int) {
	t.Helper()
	want, werr := readManifestJSON(bytes.NewReader(b), max)
	got, err := ReadManifest(bytes.NewReader(b), int64(len(b)), max)
	var le, wle *LimitError
	if (err != nil) != (werr != nil) || (err == nil && !reflect.DeepEqual(got, want)) || errors.As(err, &le) != errors.As(werr, &wle) {
		t.Errorf("%.200s: ReadManifest %+v, %v; encoding/json %+v, %v", b, got, err, want, werr)
	}
}

// FuzzReadManifest: ReadManifest's verdict on any bytes is encoding/json's.
func FuzzReadManifest(f *testing.F) {
	f.Add([]byte(`{"version":1,"entries":[{"path":"a","type":"dir","mode":493}],"skipped":["b"]}`), 0)
	f.Add([]byte(`{"version":1,"entries":null}`), 1)
	f.Fuzz(func(t *testing.T, b []byte, max int) {
		checkReadManifest(t, b, max%5)
	})
}

// decodeEntryFast decodes raw, one entry, as scanEntry does, with nothing
// after it.
func decodeEntryFast(raw []byte) (Entry, bool) {
	s := jsonscan.New(raw)
	e, ok := scanEntry(&s)
	return e, ok && s.End()
}
