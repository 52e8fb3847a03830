package pane

import (
	"bytes"
	"regexp"
	"testing"
)

func filterAll(chunks ...[]byte) string {
	var out bytes.Buffer
	f := NewFilter(&out)
	for _, c := range chunks {
		_, _ = f.Write(c)
	}
	return out.String()
}

func TestFilter(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"text and unicode", "hello ❯ 日本語 ✳\r\n", "hello ❯ 日本語 ✳\r\n"},
		{"colours and cursor", "\x1b[1;31mred\x1b[0m\x1b[2J\x1b[H\x1b[?1049h\x1b[?25l", "\x1b[1;31mred\x1b[0m\x1b[2J\x1b[H\x1b[?1049h\x1b[?25l"},
		{"short escapes", "\x1b7\x1b8\x1b=\x1b>\x1bM\x1b(B", "\x1b7\x1b8\x1b=\x1b>\x1bM\x1b(B"},
		{"cursor style kept", "\x1b[2 q", "\x1b[2 q"},
		{"OSC 52 clipboard", "a\x1b]52;c;cm0gLXJmIC8=\x07b", "ab"},
		{"OSC title with ST", "a\x1b]0;pwned\x1b\\b", "ab"},
		{"OSC 8 hyperlink", "\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\", "link"},
		{"DCS DECRQSS", "a\x1bP$qm\x1b\\b", "ab"},
		{"APC", "a\x1b_payload\x1b\\b", "ab"},
		{"device status report", "a\x1b[6nb\x1b[5n", "ab"},
		{"device attributes", "\x1b[c\x1b[>c\x1b[=c", ""},
		{"window ops", "\x1b[21t\x1b[8;100;200t", ""},
		{"mode report", "\x1b[?2004$p", ""},
		{"version report", "\x1b[>q", ""},
		{"C0 controls", "a\x00\x05\x1a\x7fb\a\b\t", "ab\a\b\t"},
		{"C1 CSI as UTF-8", "a\u009b6nb", "a6nb"},
		{"Latin-1 letters kept", "café ¡", "café ¡"},
		{"lone 0xC2 before a character", "\xc2❯", "❯"},
		{"overlong CSI dropped", "\x1b[" + string(bytes.Repeat([]byte("1;"), 40)) + "m" + "x", "x"},
	} {
		if got := filterAll([]byte(tc.in)); got != tc.want {
			t.Errorf("%s: %q -> %q, want %q", tc.name, tc.in, got, tc.want)
		}
	}
}

// dangerous matches what must never reach the operator's terminal.
var dangerous = regexp.MustCompile("\x1b[\\]P_^X]|\x1b\\[[\x20-\x3f]*[nctx]|\u0080|\u009b|\u009d|\x1b\\[[\x20-\x3f]*\\$[\x20-\x3f]*p")

func FuzzFilter(f *testing.F) {
	for _, s := range []string{"\x1b]52;c;x\x07", "\x1b[6n", "a\x1b[31mb", "\u009b6n", "\x1bP$q\x1b\\"} {
		f.Add([]byte(s), 3)
	}
	f.Fuzz(func(t *testing.T, in []byte, cut int) {
		whole := filterAll(in)
		if dangerous.MatchString(whole) {
			t.Fatalf("%q let through %q", in, whole)
		}
		if cut < 0 {
			cut = -cut
		}
		if len(in) > 0 {
			cut %= len(in)
		} else {
			cut = 0
		}
		if split := filterAll(in[:cut], in[cut:]); split != whole {
			t.Fatalf("split at %d: %q, whole: %q", cut, split, whole)
		}
	})
}
