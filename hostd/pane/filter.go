package pane

import (
	"bytes"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/polecat-sidecar/sidecar/internal/termsafe"
)

// Filter passes a polecat's terminal output to an operator's terminal,
// letting through only whole sequences of an allow list of what a TUI
// needs to draw (printable UTF-8 but C1 and bidi controls, BEL BS HT LF
// CR, SGR, cursor movement and editing, the modes and ESC sequences
// below); the rest, every request a terminal answers into its input
// included, is dropped. State carries across writes, so a split sequence
// is judged whole. The list and why: docs/security.md, "The operator's terminal".
type Filter struct {
	w     io.Writer
	state filterState
	seq   []byte // the escape sequence or UTF-8 character being read
	need  int    // UTF-8 continuation bytes still to come
	out   []byte
}

type filterState int

const (
	ground filterState = iota
	inUTF8
	afterESC
	escIntermediate
	csi
	csiDropped    // a CSI sequence too long to keep: dropped to its final byte
	controlString // OSC, DCS, SOS, PM, APC: dropped up to BEL or ST
	controlStringESC
)

// maxSeq bounds a kept escape sequence; a longer one is dropped.
const maxSeq = 64

// textControls are the C0 controls that pass: BEL, BS, HT, LF, CR.
const textControls = "\a\b\t\n\r"

// escFinals are the finals of the ESC sequences that pass with no
// intermediate byte: DECSC, DECRC, RI, DECKPAM, DECKPNM.
const escFinals = "78M=>"

// csiMaxParams maps the final byte of each plain CSI sequence that passes
// (no private marker, no intermediate) to how many parameters it may
// have; SGR (m) is apart, as it takes any number and sub-parameters.
var csiMaxParams = map[byte]int{
	'A': 1, 'B': 1, 'C': 1, 'D': 1, 'E': 1, 'F': 1, 'G': 1, 'd': 1, // CUU CUD CUF CUB CNL CPL CHA VPA
	'J': 1, 'K': 1, 'X': 1, '@': 1, 'P': 1, 'L': 1, 'M': 1, 'S': 1, 'T': 1, // ED EL ECH ICH DCH IL DL SU SD
	'H': 2, 'f': 2, 'r': 2, // CUP HVP DECSTBM
}

// privateModes are the DECSET/DECRST modes that pass, as written.
var privateModes = map[string]bool{
	"1": true, "7": true, "12": true, "25": true, "47": true, "1047": true, "1049": true,
	"1000": true, "1001": true, "1002": true, "1003": true, "1004": true, "1005": true, "1006": true,
	"2004": true, "2026": true,
}

// NewFilter writes what it lets through to w.
func NewFilter(w io.Writer) *Filter { return &Filter{w: w} }

// Write filters p; it reports len(p) written once what passed is written.
func (f *Filter) Write(p []byte) (int, error) {
	f.out = f.out[:0]
	for _, b := range p {
		f.take(b)
	}
	if len(f.out) > 0 {
		if _, err := f.w.Write(f.out); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

// take reads one byte. A byte that cannot continue the sequence being
// read ends it (dropped) and is read again from the ground state.
func (f *Filter) take(b byte) {
	switch f.state {
	case ground:
		switch {
		case b == 0x1b:
			f.state, f.seq = afterESC, append(f.seq[:0], b)
		case b < 0x20:
			if strings.IndexByte(textControls, b) >= 0 {
				f.out = append(f.out, b)
			}
		case b < 0x7f:
			f.out = append(f.out, b)
		case b >= 0xc2 && b <= 0xf4: // a UTF-8 lead byte
			f.state, f.seq, f.need = inUTF8, append(f.seq[:0], b), utf8Len(b)-1
		}
		// DEL, stray continuation bytes and 8-bit C1 controls: dropped
	case inUTF8:
		if b < 0x80 || b > 0xbf {
			f.state = ground
			f.take(b)
			return
		}
		f.seq = append(f.seq, b)
		if f.need--; f.need > 0 {
			return
		}
		f.state = ground
		if r, n := utf8.DecodeRune(f.seq); n == len(f.seq) && r != utf8.RuneError && !termsafe.Unsafe(r) {
			f.out = append(f.out, f.seq...)
		}
	case afterESC:
		switch {
		case b == '[':
			f.state, f.seq = csi, append(f.seq, b)
		case b == ']' || b == 'P' || b == 'X' || b == '^' || b == '_':
			f.state = controlString
		case b >= 0x20 && b <= 0x2f:
			f.state, f.seq = escIntermediate, append(f.seq, b)
		case b >= 0x30 && b <= 0x7e:
			if strings.IndexByte(escFinals, b) >= 0 {
				f.out = append(f.out, 0x1b, b)
			}
			f.state = ground
		default:
			f.state = ground
			f.take(b)
		}
	case escIntermediate:
		switch {
		case b >= 0x20 && b <= 0x2f:
			if len(f.seq) < maxSeq {
				f.seq = append(f.seq, b)
			}
		case b >= 0x30 && b <= 0x7e:
			if s := string(append(f.seq, b)); s == "\x1b(B" || s == "\x1b(0" {
				f.out = append(f.out, s...)
			}
			f.state = ground
		default:
			f.state = ground
			f.take(b)
		}
	case csi:
		switch {
		case b >= 0x20 && b <= 0x3f && len(f.seq) >= maxSeq:
			f.state = csiDropped
		case b >= 0x20 && b <= 0x3f:
			f.seq = append(f.seq, b)
		case b >= 0x40 && b <= 0x7e:
			if csiAllowed(f.seq[2:], b) {
				f.out = append(append(f.out, f.seq...), b)
			}
			f.state = ground
		default:
			f.state = ground
			f.take(b)
		}
	case csiDropped:
		switch {
		case b >= 0x20 && b <= 0x3f:
		case b >= 0x40 && b <= 0x7e:
			f.state = ground
		default:
			f.state = ground
			f.take(b)
		}
	case controlString:
		switch b {
		case 0x07:
			f.state = ground
		case 0x1b:
			f.state = controlStringESC
		}
	case controlStringESC:
		if b == '\\' {
			f.state = ground
		} else {
			f.state = controlString
		}
	}
}

// utf8Len is the length of the UTF-8 character lead starts.
func utf8Len(lead byte) int {
	switch {
	case lead >= 0xf0:
		return 4
	case lead >= 0xe0:
		return 3
	}
	return 2
}

// csiAllowed says whether the CSI sequence with parameter and
// intermediate bytes body and final byte final is on the allow list.
func csiAllowed(body []byte, final byte) bool {
	private := len(body) > 0 && body[0] == '?'
	if private {
		body = body[1:]
	}
	cut := bytes.IndexFunc(body, func(r rune) bool { return r >= 0x20 && r <= 0x2f })
	params, inter := body, []byte(nil)
	if cut >= 0 {
		params, inter = body[:cut], body[cut:]
	}
	for _, b := range inter {
		if b > 0x2f { // a parameter byte after an intermediate: malformed
			return false
		}
	}
	switch {
	case private:
		return len(inter) == 0 && (final == 'h' || final == 'l') && modesAllowed(params)
	case string(inter) == " ":
		return final == 'q' && numbers(params, 1) // DECSCUSR
	case len(inter) > 0:
		return false
	case final == 'm': // SGR
		return len(strings.Trim(string(params), "0123456789;:")) == 0
	}
	max, ok := csiMaxParams[final]
	return ok && numbers(params, max)
}

// numbers says whether params is at most max numeric parameters.
func numbers(params []byte, max int) bool {
	return len(strings.Trim(string(params), "0123456789;")) == 0 && bytes.Count(params, []byte(";")) < max
}

// modesAllowed says whether params names only private modes that pass.
func modesAllowed(params []byte) bool {
	for _, m := range strings.Split(string(params), ";") {
		if !privateModes[m] {
			return false
		}
	}
	return true
}
