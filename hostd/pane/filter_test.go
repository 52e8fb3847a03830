package pane

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
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
		{"text and unicode", "hello ❯ 日本語 ✳ 🐱\r\n", "hello ❯ 日本語 ✳ 🐱\r\n"},
		{"colours and cursor", "\x1b[1;31mred\x1b[0m\x1b[2J\x1b[H\x1b[?1049h\x1b[?25l", "\x1b[1;31mred\x1b[0m\x1b[2J\x1b[H\x1b[?1049h\x1b[?25l"},
		{"truecolour and underline styles", "\x1b[38;2;255;0;0m\x1b[4:3m\x1b[m", "\x1b[38;2;255;0;0m\x1b[4:3m\x1b[m"},
		{"movement and editing", "\x1b[3A\x1b[B\x1b[10C\x1b[D\x1b[E\x1b[2F\x1b[5G\x1b[7d\x1b[3;4f\x1b[K\x1b[1J\x1b[4X\x1b[2@\x1b[P\x1b[L\x1b[3M\x1b[S\x1b[T\x1b[1;40r\x1b[r",
			"\x1b[3A\x1b[B\x1b[10C\x1b[D\x1b[E\x1b[2F\x1b[5G\x1b[7d\x1b[3;4f\x1b[K\x1b[1J\x1b[4X\x1b[2@\x1b[P\x1b[L\x1b[3M\x1b[S\x1b[T\x1b[1;40r\x1b[r"},
		{"TUI modes", "\x1b[?1h\x1b[?7l\x1b[?12l\x1b[?47h\x1b[?1047l\x1b[?1000;1006h\x1b[?2004h\x1b[?2026h\x1b[?2026l",
			"\x1b[?1h\x1b[?7l\x1b[?12l\x1b[?47h\x1b[?1047l\x1b[?1000;1006h\x1b[?2004h\x1b[?2026h\x1b[?2026l"},
		{"short escapes", "\x1b7\x1b8\x1b=\x1b>\x1bM\x1b(B\x1b(0", "\x1b7\x1b8\x1b=\x1b>\x1bM\x1b(B\x1b(0"},
		{"cursor style kept", "\x1b[2 q", "\x1b[2 q"},
		{"OSC 52 clipboard", "a\x1b]52;c;cm0gLXJmIC8=\x07b", "ab"},
		{"OSC title with ST", "a\x1b]0;pwned\x1b\\b", "ab"},
		{"OSC 8 hyperlink", "\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\", "link"},
		{"DCS DECRQSS", "a\x1bP$qm\x1b\\b", "ab"},
		{"APC", "a\x1b_payload\x1b\\b", "ab"},
		{"device status report", "a\x1b[6nb\x1b[5n", "ab"},
		{"device attributes", "\x1b[c\x1b[>c\x1b[=c\x1b[0c", ""},
		{"DECID", "a\x1bZb", "ab"},
		{"window ops", "\x1b[21t\x1b[8;100;200t", ""},
		{"mode reports", "\x1b[?2004$p\x1b[4$p\x1b[?u\x1b[1$w", ""},
		{"version report", "\x1b[>q", ""},
		{"modifyOtherKeys is not SGR", "\x1b[>4;1m", ""},
		{"unlisted private mode", "\x1b[?1049;9999h\x1b[?0025h\x1b[?h", ""},
		{"too many parameters", "\x1b[1;2;3H\x1b[1;2A\x1b[1;2;3;4;5T", ""},
		{"ISO 2022 switch then 8-bit CSI", "a\x1b%@\x9b6n\x9d0;x\x9cb\x1b%G", "a6n0;xb"},
		{"reset and charsets", "\x1bc\x1b#8\x1b)0\x1b(A\x0e\x0f", ""},
		{"C0 controls", "a\x00\x05\x1a\x7fb\a\b\t", "ab\a\b\t"},
		{"C1 CSI as UTF-8", "a\u009b6nb", "a6nb"},
		{"bidi override", "a\u202eb\u2066c", "abc"},
		{"Latin-1 letters kept", "café ¡", "café ¡"},
		{"lone 0xC2 before a character", "\xc2❯", "❯"},
		{"invalid UTF-8", "a\xff\xe0\x80\x80\xed\xa0\x80\xf4\x90\x80\x80b", "ab"},
		{"ESC aborts ESC", "\x1b\x1b[31mx", "\x1b[31mx"},
		{"C0 inside CSI aborts it", "\x1b[3\x07A", "\aA"},
		{"overlong CSI dropped", "\x1b[" + strings.Repeat("1;", 40) + "m" + "x", "x"},
	} {
		if got := filterAll([]byte(tc.in)); got != tc.want {
			t.Errorf("%s: %q -> %q, want %q", tc.name, tc.in, got, tc.want)
		}
	}
}

// answerBack is a corpus of what a polecat's program could send to make
// the operator's terminal act beyond its window or answer into its input,
// 7-bit and 8-bit; none of it may pass, whole or split across writes.
var answerBack = []string{
	"\x1b[5n", "\x1b[6n", "\x1b[?6n", "\x1b[?15n", "\x1b[?26n", // DSR
	"\x1b[c", "\x1b[0c", "\x1b[>c", "\x1b[>0c", "\x1b[=c", // DA1, DA2, DA3
	"\x1bZ",                                 // DECID
	"\x1b[?2004$p", "\x1b[4$p", "\x1b[?1$p", // DECRQM
	"\x1b[1$w", "\x1b[2$w", "\x1b[?u", "\x1b[>1u", // DECRQPSR, kitty keyboard
	"\x1b[>q", "\x1b[>0q", "\x1b[x", "\x1b[1x", // XTVERSION, DECREQTPARM
	"\x1b[14t", "\x1b[18t", "\x1b[21t", "\x1b[8;1;1t", // window reports and ops
	"\x1b[?996n", "\x1b[>4;1m", "\x1b[5i", "\x1b[?5i", // colour scheme report, modifyOtherKeys, printer
	"\x1b]52;c;cm0gLXJmIC8=\x07", "\x1b]52;c;?\x1b\\", // OSC 52 set and read
	"\x1b]0;title\x07", "\x1b]2;title\x1b\\", "\x1b]10;?\x07", "\x1b]11;?\x1b\\", "\x1b]4;1;?\x07", // title, colour queries
	"\x1b]8;;http://evil\x1b\\", "\x1b]1337;File=x\x07", "\x1b]777;notify;a;b\x07", // hyperlink, iTerm2, notification
	"\x1bP$qm\x1b\\", "\x1bP+q544e\x1b\\", "\x1bPtmux;\x1b\x1b]52;c;x\x07\x1b\\", // DECRQSS, XTGETTCAP, tmux passthrough
	"\x1bXsos\x1b\\", "\x1b^pm\x1b\\", "\x1b_Gf=100;x\x1b\\", // SOS, PM, APC (kitty graphics)
	"\x1b%@", "\x1b%G", "\x1b%8", "\x1b c", "\x1b G", "\x1bc", "\x1b#8", // coding switches, C1 transmission, reset, DECALN
	"\x9b6n", "\x9bc", "\x9b?2004$p", "\x9d52;c;x\x07", "\x90$qm\x9c", "\x98sos\x9c", "\x9epm\x9c", "\x9fapc\x9c", // 8-bit C1
	"\u009b6n", "\u009d0;x\u009c", "\u0090$qm\u009c", "\u009f_x\u009c", // C1 as UTF-8
	"\x1b%@\x9b6n", "\x1b%@\x9d0;x\x9c", // ISO 2022, then raw C1
}

// harmless is what may remain of a corpus entry: a sequence's parameters
// become text once its introducer is dropped, as in "\x9b6n" -> "6n"
// (and a BEL that ended an 8-bit OSC rings).
var harmless = regexp.MustCompile(`^[ -~\x07]*$`)

func TestFilterAnswerBack(t *testing.T) {
	for _, seq := range answerBack {
		in := []byte("a" + seq + "b")
		whole := filterAll(in)
		if !harmless.MatchString(whole) || !strings.HasPrefix(whole, "a") || !strings.HasSuffix(whole, "b") {
			t.Errorf("%q -> %q", seq, whole)
		}
		if !strings.ContainsFunc(seq, func(r rune) bool { return r >= 0x80 }) && whole != "ab" {
			t.Errorf("%q (7-bit) -> %q, want it dropped whole", seq, whole)
		}
		for cut := 1; cut < len(in); cut++ {
			if split := filterAll(in[:cut], in[cut:]); split != whole {
				t.Errorf("%q split at %d -> %q, whole -> %q", seq, cut, split, whole)
			}
		}
		var bytewise [][]byte
		for i := range in {
			bytewise = append(bytewise, in[i:i+1])
		}
		if got := filterAll(bytewise...); got != whole {
			t.Errorf("%q a byte at a time -> %q, whole -> %q", seq, got, whole)
		}
	}
}

// allowed matches output made only of what the allow list lets through,
// written independently of the filter's code.
var allowed = regexp.MustCompile(`^(?:` +
	`[^\x00-\x1f\x7f-\x9f\x{061c}\x{200e}\x{200f}\x{202a}-\x{202e}\x{2066}-\x{2069}]|[\x07\x08\t\n\r]` +
	`|\x1b\[[0-9;:]*m` +
	`|\x1b\[[0-9]*[ABCDEFGdJKX@PLMST]|\x1b\[[0-9]*(?:;[0-9]*)?[Hfr]|\x1b\[[0-9]* q` +
	`|\x1b\[\?(?:1|7|12|25|47|1047|1049|100[0-6]|2004|2026)(?:;(?:1|7|12|25|47|1047|1049|100[0-6]|2004|2026))*[hl]` +
	`|\x1b[78M=>]|\x1b\([B0]` +
	`)*$`)

func FuzzFilter(f *testing.F) {
	for _, s := range append([]string{"a\x1b[31mb", "\x1b[?1049h\x1b[H\x1b[2J", "日本\xe6\x97", "\x1b(0qqq\x1b(B"}, answerBack...) {
		f.Add([]byte(s), 3)
	}
	f.Fuzz(func(t *testing.T, in []byte, cut int) {
		whole := filterAll(in)
		if !utf8.ValidString(whole) || !allowed.MatchString(whole) {
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
