package sync

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"strconv"
	"time"

	"github.com/polecat-sidecar/sidecar/internal/jsonscan"
)

// A manifest of a large tree is encoded on every transfer (the agent's
// archive and its record of the exchange, hostd's base) and decoded on
// every one (hostd reads the archive's): encoding/json's reflection was a
// third of the agent's CPU in a delta pull of 10,004 files, and reading
// the manifest an eighth of hostd's. MarshalJSON writes the bytes
// encoding/json would, by hand; decodeEntryFast reads the form they have
// and leaves anything else to encoding/json, whose verdict stands.

// MarshalJSON encodes m as encoding/json encodes the struct, byte for
// byte (TestManifestJSON, FuzzEntryJSON), without reflection.
func (m Manifest) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, 64+len(m.Entries)*200)
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

// decodeEntryFast decodes one manifest entry as encoding/json, refusing
// unknown fields, would, when it has the form MarshalJSON writes: every
// key spelt as its tag and given once, strings without escapes or control
// characters, integers in plain digits, no nulls. ok is false for
// anything else, which the caller leaves to encoding/json.
func decodeEntryFast(raw []byte) (e Entry, ok bool) {
	s := jsonscan.New(raw)
	if !s.Take('{') {
		return e, false
	}
	var seen uint8
	if s.Take('}') {
		return e, s.End()
	}
	for {
		key, ok := s.Text()
		if !ok || !s.Take(':') {
			return e, false
		}
		var bit uint8
		switch string(key) {
		case "path":
			bit, ok = 1, scanString(&s, &e.Path)
		case "type":
			bit, ok = 2, scanType(&s, &e.Type)
		case "mode":
			var n uint64
			bit, ok = 4, scanUint(&s, &n, 32)
			e.Mode = fs.FileMode(n)
		case "mtime":
			bit, ok = 8, scanTime(&s, &e.MTime)
		case "size":
			var n uint64
			bit, ok = 16, scanUint(&s, &n, 63)
			e.Size = int64(n)
		case "sha256":
			bit, ok = 32, scanString(&s, &e.SHA256)
		case "target":
			bit, ok = 64, scanString(&s, &e.Target)
		case "unchanged":
			bit, ok = 128, scanBool(&s, &e.Unchanged)
		default:
			return e, false
		}
		if !ok || seen&bit != 0 {
			return e, false
		}
		seen |= bit
		if s.Take('}') {
			return e, s.End()
		}
		if !s.Take(',') {
			return e, false
		}
	}
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

// decodeEntry decodes one entry: decodeEntryFast, or encoding/json
// refusing unknown fields.
func decodeEntry(raw []byte) (Entry, error) {
	if e, ok := decodeEntryFast(raw); ok {
		return e, nil
	}
	var e Entry
	d := json.NewDecoder(bytes.NewReader(raw))
	d.DisallowUnknownFields()
	err := d.Decode(&e)
	return e, err
}
