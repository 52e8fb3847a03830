package nudge

import (
	"strings"
	"unicode/utf8"
)

// Sanitize makes a nudge safe to paste into a terminal: escape sequences
// (CSI, OSC, DCS and the rest, which could end a bracketed paste early,
// move the cursor or set the clipboard) are removed whole, every other
// control character (C0, DEL, C1) is dropped except newline, a tab
// becomes a space, CRLF and a lone CR become a newline, and invalid UTF-8
// becomes U+FFFD.
func Sanitize(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b.WriteRune(utf8.RuneError)
		case r == 0x1b:
			i += escapeLen(s[i:])
			continue
		case r == '\r':
			b.WriteByte('\n')
			if i+1 < len(s) && s[i+1] == '\n' {
				i++
			}
		case r == '\n':
			b.WriteByte('\n')
		case r == '\t':
			b.WriteByte(' ')
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f):
			// dropped
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// escapeLen is the length of the escape sequence at the start of s (which
// starts with ESC): CSI up to its final byte, OSC, DCS, SOS, PM and APC
// up to BEL or ST (ESC \), otherwise ESC and the one byte after it. An
// unterminated sequence runs to the end.
func escapeLen(s string) int {
	if len(s) < 2 {
		return len(s)
	}
	switch s[1] {
	case '[': // CSI: parameters and intermediates, then a final byte 0x40-0x7e
		for i := 2; i < len(s); i++ {
			if s[i] >= 0x40 && s[i] <= 0x7e {
				return i + 1
			}
		}
		return len(s)
	case ']', 'P', 'X', '^', '_': // strings ended by BEL or ST
		for i := 2; i < len(s); i++ {
			if s[i] == 0x07 {
				return i + 1
			}
			if s[i] == 0x1b && i+1 < len(s) && s[i+1] == '\\' {
				return i + 2
			}
		}
		return len(s)
	}
	return 2
}
