package nudge

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestSanitize(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"plain", "rebase on main; -x $(id) `id` 'q' \"q\"", "rebase on main; -x $(id) `id` 'q' \"q\""},
		{"unicode kept", "héllo ❯ 日本語 🚀", "héllo ❯ 日本語 🚀"},
		{"tab", "a\tb", "a b"},
		{"newlines", "a\nb\r\nc\rd", "a\nb\nc\nd"},
		{"CSI colour", "\x1b[31mred\x1b[0m", "red"},
		{"CSI cursor moves", "a\x1b[2J\x1b[1;1Hb\x1b[?2004l", "ab"},
		{"paste end inside the text", "x\x1b[201~; rm -rf /\n", "x; rm -rf /\n"},
		{"OSC 52 clipboard, BEL", "a\x1b]52;c;aGk=\x07b", "ab"},
		{"OSC title, ST", "a\x1b]0;owned\x1b\\b", "ab"},
		{"DCS", "a\x1bPq#0;2;0;0;0\x1b\\b", "ab"},
		{"two-byte escape", "a\x1bcb", "ab"},
		{"unterminated CSI", "a\x1b[31", "a"},
		{"unterminated OSC", "a\x1b]52;c;aGk=", "a"},
		{"lone ESC at the end", "a\x1b", "a"},
		{"C0 and DEL", "a\x00\x01\x07\x08\x7fb", "ab"},
		{"C1 controls", "a\u009b31mb\u0085c", "a31mbc"},
		{"invalid UTF-8", "a\xffb", "a\uFFFDb"},
	} {
		if got := Sanitize(tc.in); got != tc.want {
			t.Errorf("%s: Sanitize(%q) = %q, want %q", tc.name, tc.in, got, tc.want)
		}
	}
}

func FuzzSanitize(f *testing.F) {
	for _, s := range []string{"a\x1b[31mb", "\x1b]52;c;x\x07", "x\x1b[201~y", "a\r\nb", "\xff\u009b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		out := Sanitize(in)
		if !utf8.ValidString(out) {
			t.Fatalf("Sanitize(%q) = %q: not UTF-8", in, out)
		}
		for _, r := range out {
			if (r < 0x20 && r != '\n') || r == 0x7f || (r >= 0x80 && r <= 0x9f) {
				t.Fatalf("Sanitize(%q) = %q: control character %U left", in, out, r)
			}
		}
		if Sanitize(out) != out {
			t.Fatalf("Sanitize is not idempotent on %q", in)
		}
		if strings.Contains(out, "\x1b") {
			t.Fatalf("escape left in %q", out)
		}
	})
}
