package limited

import (
	"strings"
	"testing"
)

// TestWriter: the first N bytes are kept across writes, the rest dropped,
// and every write reports all of its bytes written (git must not fail on
// a full stderr).
func TestWriter(t *testing.T) {
	for _, c := range []struct {
		name   string
		n      int
		writes []string
		want   string
	}{
		{"within", 10, []string{"abc", "def"}, "abcdef"},
		{"cut in a write", 4, []string{"abc", "def"}, "abcd"},
		{"cut at a write's end", 3, []string{"abc", "def"}, "abc"},
		{"nothing kept", 0, []string{"abc"}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			var b strings.Builder
			w := &Writer{W: &b, N: c.n}
			for _, s := range c.writes {
				if n, err := w.Write([]byte(s)); n != len(s) || err != nil {
					t.Errorf("Write(%q) = %d, %v; want %d, nil", s, n, err, len(s))
				}
			}
			if b.String() != c.want {
				t.Errorf("kept %q, want %q", b.String(), c.want)
			}
		})
	}
}

// TestTruncate: text up to 64 bytes is kept whole, longer text cut there.
func TestTruncate(t *testing.T) {
	for in, want := range map[string]string{
		"":                      "",
		strings.Repeat("x", 64): strings.Repeat("x", 64),
		strings.Repeat("x", 65): strings.Repeat("x", 64) + "...",
	} {
		if got := Truncate(in); got != want {
			t.Errorf("Truncate(%d bytes) = %q, want %q", len(in), got, want)
		}
	}
}
