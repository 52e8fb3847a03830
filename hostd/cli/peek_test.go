package cli

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestLineWriter: lines are handed on whole; a pane with no newline is
// handed on in pieces of at most maxLine bytes, each whole UTF-8, and
// the writer never holds more than maxLine bytes and a newline, however
// it is written to.
func TestLineWriter(t *testing.T) {
	long := strings.Repeat("x", 10<<20)
	wide := strings.Repeat("日本", 200<<10)
	for _, tc := range []struct {
		name  string
		in    string
		chunk int
		want  []string // nil: only the bounds and the bytes are checked
	}{
		{"lines", "a\nbb\n\nccc", 2, []string{"a", "bb", "", "ccc"}},
		{"exactly the bound", strings.Repeat("y", maxLine) + "\nz", 1000, []string{strings.Repeat("y", maxLine), "z"}},
		{"one over the bound", strings.Repeat("y", maxLine+1) + "\nz", 1000, []string{strings.Repeat("y", maxLine), "y", "z"}},
		{"no newline, large writes", long, 1 << 20, nil},
		{"no newline, small writes", long[:1<<20], 7, nil},
		{"no newline, UTF-8", wide, 32 << 10, nil},
	} {
		var got []string
		w := &lineWriter{line: func(l []byte) error { got = append(got, string(l)); return nil }}
		held := 0
		for in := tc.in; len(in) > 0; {
			n := min(tc.chunk, len(in))
			if k, err := w.Write([]byte(in[:n])); k != n || err != nil {
				t.Fatalf("%s: Write = %d, %v", tc.name, k, err)
			}
			in = in[n:]
			held = max(held, len(w.buf))
		}
		if err := w.flush(); err != nil {
			t.Fatal(err)
		}
		if held > maxLine+1 || cap(w.buf) > 2*maxLine {
			t.Errorf("%s: the writer held %d bytes (capacity %d), bound %d", tc.name, held, cap(w.buf), maxLine)
		}
		if tc.want != nil {
			if strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Errorf("%s: lines %q, want %q", tc.name, got, tc.want)
			}
			continue
		}
		for i, l := range got {
			if len(l) > maxLine || len(l) < maxLine-utf8.UTFMax && i < len(got)-1 || !utf8.ValidString(l) {
				t.Fatalf("%s: piece %d of %d bytes (bound %d), valid UTF-8 %v", tc.name, i, len(l), maxLine, utf8.ValidString(l))
			}
		}
		if !bytes.Equal([]byte(strings.Join(got, "")), []byte(tc.in)) {
			t.Errorf("%s: the pieces do not add up to what was written", tc.name)
		}
	}
}
