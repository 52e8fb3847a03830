package termsafe

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestString(t *testing.T) {
	for _, tc := range []struct{ name, in, want, line string }{
		{"printable", "polecat/bullet-farmer ❯ 日本語 café", "polecat/bullet-farmer ❯ 日本語 café", "polecat/bullet-farmer ❯ 日本語 café"},
		{"layout", "a\tb\nc", "a\tb\nc", `a\tb\nc`},
		{"OSC 52", "\x1b]52;c;cHduZWQ=\x07", `\x1b]52;c;cHduZWQ=\x07`, `\x1b]52;c;cHduZWQ=\x07`},
		{"CSI 2J and CR", "\x1b[2J\r", `\x1b[2J\r`, `\x1b[2J\r`},
		{"NUL and DEL", "a\x00b\x7f", `a\x00b\u007f`, `a\x00b\u007f`},
		{"C1 as UTF-8", "\u009b31m\u009d0;t\u0085", `\u009b31m\u009d0;t\u0085`, `\u009b31m\u009d0;t\u0085`},
		{"C1 as raw bytes", "\x9b31m\x9d", `\x9b31m\x9d`, `\x9b31m\x9d`},
		{"not UTF-8", "\xff\xc2", `\xff\xc2`, `\xff\xc2`},
		{"bidi", "a\u202eb\u2066c\u200e\u200f\u061c\u202a", `a\u202eb\u2066c\u200e\u200f\u061c\u202a`, `a\u202eb\u2066c\u200e\u200f\u061c\u202a`},
		{"Latin-1 and U+FFFD kept", "\u00a0¡\ufffd", "\u00a0¡\ufffd", "\u00a0¡\ufffd"},
	} {
		if got := String(tc.in); got != tc.want {
			t.Errorf("%s: String(%q) = %q, want %q", tc.name, tc.in, got, tc.want)
		}
		if got := Line(tc.in); got != tc.line {
			t.Errorf("%s: Line(%q) = %q, want %q", tc.name, tc.in, got, tc.line)
		}
	}
}

func TestUnsafe(t *testing.T) {
	for _, tc := range []struct {
		r    rune
		want bool
	}{
		{0, true}, {'\n', true}, {0x1b, true}, {' ', false}, {'~', false}, {0x7f, true}, {0x80, true}, {0x9b, true}, {0x9f, true},
		{0xa0, false}, {0x061c, true}, {0x200d, false}, {0x200e, true}, {0x200f, true}, {0x2029, false}, {0x202a, true}, {0x202e, true},
		{0x202f, false}, {0x2065, false}, {0x2066, true}, {0x2069, true}, {0x206a, false}, {'❯', false},
	} {
		if got := Unsafe(tc.r); got != tc.want {
			t.Errorf("Unsafe(%U) = %v, want %v", tc.r, got, tc.want)
		}
	}
}

// errWriter fails every write.
type errWriter struct{}

func (errWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestWriter(t *testing.T) {
	var out bytes.Buffer
	w := NewWriter(&out)
	for _, s := range []string{"plain\n", "evil \x1b]0;title\x07\n", "\u009b6n\n"} {
		if n, err := w.Write([]byte(s)); n != len(s) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", s, n, err)
		}
	}
	if want := "plain\nevil \\x1b]0;title\\x07\n\\u009b6n\n"; out.String() != want {
		t.Errorf("wrote %q, want %q", out.String(), want)
	}
	if _, err := NewWriter(errWriter{}).Write([]byte("\x1b")); err == nil {
		t.Error("a failed write reported no error")
	}
	if Raw(w) != &out || Raw(&out) != &out {
		t.Error("Raw did not return the writer under a Writer, or changed another writer")
	}
}

// TestWriterKeepsJSON: JSON from encoding/json, with every kind of
// unsafe character in its strings, stays valid JSON through a Writer and
// decodes to the same value, and holds none of them raw.
func TestWriterKeepsJSON(t *testing.T) {
	v := map[string]any{"line": "\x1b]52;c;x\x07 \u009b31m \u202e \x7f \x00 \u2028", "n": 1.0, "lines": []any{"a\tb", "❯"}}
	for _, indent := range []string{"", "  ", "\t"} {
		var out bytes.Buffer
		enc := json.NewEncoder(NewWriter(&out))
		enc.SetIndent("", indent)
		if err := enc.Encode(v); err != nil {
			t.Fatal(err)
		}
		assertSafe(t, out.Bytes(), true)
		var back map[string]any
		if err := json.Unmarshal(out.Bytes(), &back); err != nil {
			t.Fatalf("indent %q: not JSON any more: %v\n%s", indent, err, out.Bytes())
		}
		if !reflect.DeepEqual(back, v) {
			t.Errorf("indent %q: decodes to %q, want %q", indent, back, v)
		}
	}
}

// assertSafe fails t if out holds anything a terminal would obey: bytes
// that are not UTF-8 or an unsafe character (but newline and tab, with
// layout).
func assertSafe(t *testing.T, out []byte, layout bool) {
	t.Helper()
	if !utf8.Valid(out) {
		t.Fatalf("output is not UTF-8: %q", out)
	}
	for i, r := range string(out) {
		if Unsafe(r) && !(layout && (r == '\n' || r == '\t')) {
			t.Fatalf("output holds %U at byte %d: %q", r, i, out)
		}
	}
}

// FuzzWriter: nothing unsafe comes out, whatever goes in; printable UTF-8
// passes unchanged; JSON stays the same JSON.
func FuzzWriter(f *testing.F) {
	for _, s := range []string{"plain", "\x1b]52;c;x\x07", "\u009b6n", "\x9b6n", "a\u202eb", "\xc2\x9b", `{"a":"\u009b"}`, "{\"a\":\"\u009b\x7f\"}", "\xed\xa0\x80"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		var out bytes.Buffer
		if _, err := NewWriter(&out).Write(in); err != nil {
			t.Fatal(err)
		}
		assertSafe(t, out.Bytes(), true)
		assertSafe(t, []byte(Line(string(in))), false)
		if utf8.Valid(in) && !strings.ContainsFunc(string(in), func(r rune) bool { return Unsafe(r) && r != '\n' && r != '\t' }) && !bytes.Equal(out.Bytes(), in) {
			t.Fatalf("printable %q came out as %q", in, out.Bytes())
		}
		if utf8.Valid(in) && !bytes.ContainsRune(in, '\r') && json.Valid(in) {
			a, b := decodeJSON(in), decodeJSON(out.Bytes())
			if !json.Valid(out.Bytes()) || !reflect.DeepEqual(a, b) {
				t.Fatalf("JSON %q came out as %q (%v, was %v)", in, out.Bytes(), b, a)
			}
		}
	})
}

// decodeJSON decodes valid JSON, numbers as written.
func decodeJSON(b []byte) any {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	_ = d.Decode(&v)
	return v
}
