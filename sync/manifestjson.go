package sync

import (
	"encoding/json"
	"io/fs"
	"slices"
	"strconv"
	"time"

	"github.com/polecat-sidecar/sidecar/internal/jsonscan"
)

// A manifest is encoded and decoded on every transfer, and encoding/json's
// reflection was a third of the agent's CPU in a delta pull and an eighth
// of hostd's: AppendJSON writes encoding/json's bytes by hand, and
// decodeManifestFast reads that form, leaving any other to encoding/json,
// whose verdict stands. Not a MarshalJSON method, whose result
// encoding/json would scan and copy again. docs/benchmarks.md, "Issue 25:
// the delta pull, hostd's half".

// AppendJSON appends m as json.Marshal encodes it, byte for byte
// (TestManifestJSON, FuzzEntryJSON), without reflection.
func (m *Manifest) AppendJSON(b []byte) ([]byte, error) {
	b = slices.Grow(b, 64+len(m.Entries)*200)
	b = append(b, `{"version":`...)
	b = strconv.AppendInt(b, int64(m.Version), 10)
	b = append(b, `,"entries":`...)
	if m.Entries == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i := range m.Entries {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = m.Entries[i].appendJSON(b); err != nil {
				return nil, err
			}
		}
		b = append(b, ']')
	}
	if len(m.Skipped) > 0 {
		b = append(b, `,"skipped":[`...)
		for i, p := range m.Skipped {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, p)
		}
		b = append(b, ']')
	}
	return append(b, '}'), nil
}

// appendJSON appends e as encoding/json encodes it.
func (e *Entry) appendJSON(b []byte) ([]byte, error) {
	b = append(b, `{"path":`...)
	b = appendString(b, e.Path)
	b = append(b, `,"type":`...)
	b = appendString(b, e.Type)
	b = append(b, `,"mode":`...)
	b = strconv.AppendUint(b, uint64(e.Mode), 10)
	if !e.MTime.IsZero() {
		t, err := e.MTime.MarshalJSON()
		if err != nil {
			return nil, err // a year encoding/json cannot write either
		}
		b = append(b, `,"mtime":`...)
		b = append(b, t...)
	}
	if e.Size != 0 {
		b = append(b, `,"size":`...)
		b = strconv.AppendInt(b, e.Size, 10)
	}
	if e.SHA256 != "" {
		b = append(b, `,"sha256":`...)
		b = appendString(b, e.SHA256)
	}
	if e.Target != "" {
		b = append(b, `,"target":`...)
		b = appendString(b, e.Target)
	}
	if e.Unchanged {
		b = append(b, `,"unchanged":true`...)
	}
	return append(b, '}'), nil
}

// appendString appends s quoted as encoding/json quotes it: by hand when
// it is printable ASCII that needs no escape (what paths and hashes
// nearly always are), through encoding/json otherwise.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // a string always encodes
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// decodeManifestFast decodes a manifest as readManifestJSON would, when it
// has the form AppendJSON writes and passes every check: keys spelt as
// their tags and given once, strings without escapes or control
// characters, integers in plain digits, entries valid and unique, nothing
// after it. ok is false for anything else, left to readManifestJSON; but
// entries or skipped paths past maxEntries (when not zero) are refused
// here, with readManifestJSON's error, as it refuses them unread.
func decodeManifestFast(b []byte, maxEntries int) (m *Manifest, ok bool, err error) {
	m = &Manifest{Version: -1}
	s := jsonscan.New(b)
	var seen map[string]struct{}
	over := func(n int) bool {
		if maxEntries > 0 && n >= maxEntries {
			err = &LimitError{Limit: "entry count", Setting: "sync.max_files", Max: int64(maxEntries)}
		}
		return err != nil
	}
	ok = s.Object(func(key []byte) bool {
		switch string(key) {
		case "version":
			var v uint64
			ok := scanUint(&s, &v, 31)
			m.Version = int(v)
			return ok
		case "entries":
			if s.Literal("null") {
				return true
			}
			seen = map[string]struct{}{}
			return scanArray(&s, func() bool {
				if over(len(m.Entries)) {
					return false
				}
				e, ok := scanEntry(&s)
				if _, dup := seen[e.Path]; !ok || dup || e.validate() != nil {
					return false
				}
				seen[e.Path] = struct{}{}
				m.Entries = append(m.Entries, e)
				return true
			})
		case "skipped":
			if s.Literal("null") {
				return true
			}
			return scanArray(&s, func() bool {
				var p string
				if over(len(m.Entries)+len(m.Skipped)) || !scanString(&s, &p) || len(p) > MaxPathLen || !ValidRel(p) {
					return false
				}
				m.Skipped = append(m.Skipped, p)
				return true
			})
		}
		return false
	})
	if err != nil {
		return nil, false, err
	}
	return m, ok && s.End() && m.Version == ManifestVersion, nil
}

// scanArray reads an array, handing each element to elem, which reads it
// and says whether it could.
func scanArray(s *jsonscan.Scanner, elem func() bool) bool {
	if !s.Take('[') {
		return false
	}
	if s.Take(']') {
		return true
	}
	for {
		if !elem() {
			return false
		}
		if s.Take(']') {
			return true
		}
		if !s.Take(',') {
			return false
		}
	}
}

// scanEntry reads one manifest entry as encoding/json, refusing unknown
// fields, would, when it has the form AppendJSON writes: every key spelt
// as its tag and given once, strings without escapes or control
// characters, integers in plain digits, no nulls. ok is false for
// anything else.
func scanEntry(s *jsonscan.Scanner) (e Entry, ok bool) {
	ok = s.Object(func(key []byte) bool {
		switch string(key) {
		case "path":
			return scanString(s, &e.Path)
		case "type":
			return scanType(s, &e.Type)
		case "mode":
			var n uint64
			ok := scanUint(s, &n, 32)
			e.Mode = fs.FileMode(n)
			return ok
		case "mtime":
			return scanTime(s, &e.MTime)
		case "size":
			var n uint64
			ok := scanUint(s, &n, 63)
			e.Size = int64(n)
			return ok
		case "sha256":
			return scanString(s, &e.SHA256)
		case "target":
			return scanString(s, &e.Target)
		case "unchanged":
			return scanBool(s, &e.Unchanged)
		}
		return false
	})
	return e, ok
}

func scanString(s *jsonscan.Scanner, v *string) bool {
	b, ok := s.Text()
	*v = string(b)
	return ok
}

// scanType is scanString for an entry's type, usually one of three,
// taken without allocating.
func scanType(s *jsonscan.Scanner, v *string) bool {
	b, ok := s.Text()
	switch string(b) {
	case TypeFile:
		*v = TypeFile
	case TypeDir:
		*v = TypeDir
	case TypeSymlink:
		*v = TypeSymlink
	default:
		*v = string(b)
	}
	return ok
}

// scanUint reads a non-negative integer in plain digits that fits in
// bits bits.
func scanUint(s *jsonscan.Scanner, v *uint64, bits int) bool {
	text, integer := s.Number()
	if !integer || len(text) == 0 || text[0] == '-' {
		return false
	}
	n, err := strconv.ParseUint(string(text), 10, bits)
	*v = n
	return err == nil
}

// scanTime reads a time as time.Time's UnmarshalJSON does.
func scanTime(s *jsonscan.Scanner, v *time.Time) bool {
	b, ok := s.Text()
	if !ok {
		return false
	}
	q := make([]byte, 0, len(b)+2)
	q = append(append(append(q, '"'), b...), '"')
	return v.UnmarshalJSON(q) == nil
}

func scanBool(s *jsonscan.Scanner, v *bool) bool {
	switch {
	case s.Literal("true"):
		*v = true
	case s.Literal("false"):
		*v = false
	default:
		return false
	}
	return true
}
