// Package termsafe makes text that a polecat influenced safe to print on
// an operator's terminal: every control character (C0 other than newline
// and tab, ESC, DEL, C1 whether as a raw byte or as UTF-8) and every
// Unicode bidirectional control is shown escaped, as \x1b or \u202e,
// instead of reaching the terminal, which would obey it (set the
// clipboard, retitle the window, clear the screen, answer back into the
// input, reorder what the operator reads). Bytes that are not UTF-8 are
// shown as \xNN.
//
// A Writer applies this to everything written through it, so a command
// whose stdout and stderr are Writers cannot forget it. Its output stays
// valid JSON when its input is JSON from encoding/json: that escapes C0
// controls itself, and the escapes this package adds to everything from
// DEL up are JSON's own \uXXXX.
package termsafe

import (
	"io"
	"unicode/utf8"
)

// Unsafe reports whether r must never reach a terminal as itself: a C0
// control (newline and tab included), DEL, a C1 control, or a
// bidirectional control (LRM, RLM, ALM, the embeddings, overrides and
// isolates).
func Unsafe(r rune) bool {
	switch {
	case r < 0x20, r >= 0x7f && r <= 0x9f:
		return true
	case r == 0x061c, r == 0x200e, r == 0x200f:
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true
	}
	return false
}

// String returns s with every unsafe character escaped except newline
// and tab, which keep their place in multi-line text.
func String(s string) string { return string(escapeBytes([]byte(s), true)) }

// Line returns s with every unsafe character escaped, newline and tab
// included: for one value inside a line or a table cell, which must not
// start a line of its own.
func Line(s string) string { return string(escapeBytes([]byte(s), false)) }

// escapeBytes returns p escaped: p itself when nothing in it needs to be.
func escapeBytes(p []byte, layout bool) []byte {
	i := firstEscape(p, layout)
	if i < 0 {
		return p
	}
	return appendEscaped(append(make([]byte, 0, len(p)+16), p[:i]...), p[i:], layout)
}

// unit decodes the character at the start of p (a byte that is not
// UTF-8 counts as one) and says whether it is shown escaped; with layout,
// newline and tab are not.
func unit(p []byte, layout bool) (r rune, n int, escape bool) {
	r, n = rune(p[0]), 1
	if r >= utf8.RuneSelf {
		r, n = utf8.DecodeRune(p)
	}
	switch {
	case r == utf8.RuneError && n == 1:
		return r, n, true
	case layout && (r == '\n' || r == '\t'):
		return r, n, false
	}
	return r, n, Unsafe(r)
}

// firstEscape is the index of the first character in p that is shown
// escaped, or -1.
func firstEscape(p []byte, layout bool) int {
	for i := 0; i < len(p); {
		_, n, escape := unit(p[i:], layout)
		if escape {
			return i
		}
		i += n
	}
	return -1
}

// appendEscaped appends p to dst with unsafe characters and bytes that
// are not UTF-8 escaped; with layout, newline and tab are kept.
func appendEscaped(dst, p []byte, layout bool) []byte {
	const hex = "0123456789abcdef"
	for i := 0; i < len(p); {
		r, n, escape := unit(p[i:], layout)
		switch {
		case !escape:
			dst = append(dst, p[i:i+n]...)
		case n == 1 && r == utf8.RuneError: // not UTF-8 (a raw C1 byte among others)
			dst = append(dst, '\\', 'x', hex[p[i]>>4], hex[p[i]&0xf])
		case r == '\n':
			dst = append(dst, '\\', 'n')
		case r == '\t':
			dst = append(dst, '\\', 't')
		case r == '\r':
			dst = append(dst, '\\', 'r')
		case r < 0x20:
			dst = append(dst, '\\', 'x', hex[r>>4], hex[r&0xf])
		default: // DEL and up: JSON's own escape
			dst = append(dst, '\\', 'u', hex[r>>12&0xf], hex[r>>8&0xf], hex[r>>4&0xf], hex[r&0xf])
		}
		i += n
	}
	return dst
}

// Writer escapes what is written to it (as String does) before writing
// it on. Each Write is judged whole and on its own, so a UTF-8 character
// split between two writes is shown as escaped bytes: write whole strings
// (fmt, encoding/json and log/slog do). It is safe for concurrent use if
// the writer under it is.
type Writer struct{ w io.Writer }

// NewWriter returns a Writer writing to w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Write writes p, escaped, to the writer under it, and reports len(p)
// once all of that is written.
func (w *Writer) Write(p []byte) (int, error) {
	if _, err := w.w.Write(escapeBytes(p, true)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Raw returns the writer under w if w is a Writer, else w itself. It is
// for a command's own terminal styling (colours, clearing the screen),
// written around text it has already escaped field by field with Line;
// nothing a polecat sent may be written to it.
func Raw(w io.Writer) io.Writer {
	if t, ok := w.(*Writer); ok {
		return t.w
	}
	return w
}
