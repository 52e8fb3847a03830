package pane

import (
	"bytes"
	"io"
)

// Filter passes a polecat's terminal output to an operator's terminal,
// keeping what a terminal UI needs and dropping what could reach past the
// window: text (UTF-8), the harmless control characters (BEL, BS, HT, LF,
// CR, SO, SI), CSI sequences (cursor, colour, erase, modes) and short
// ESC sequences pass; OSC (clipboard, title, hyperlinks), DCS, SOS, PM
// and APC strings, C1 controls, other C0 controls, and the CSI requests
// that make a terminal answer back into its input (device status and
// attributes, window operations, mode reports) are dropped. State carries
// across writes, so a sequence split between two reads is judged whole.
type Filter struct {
	w     io.Writer
	state filterState
	seq   []byte // the escape sequence being read
	out   []byte
}

type filterState int

const (
	ground filterState = iota
	afterESC
	escIntermediate
	csi
	csiDropped    // a CSI sequence too long to keep: dropped to its final byte
	controlString // OSC, DCS, SOS, PM, APC: dropped up to BEL or ST
	controlStringESC
	afterC2 // a 0xC2 byte: U+0080-U+009F (C1 controls) follow as 0x80-0x9F
)

// maxSeq bounds a kept escape sequence; a longer one is dropped.
const maxSeq = 64

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

func (f *Filter) take(b byte) {
	switch f.state {
	case ground:
		switch {
		case b == 0x1b:
			f.state, f.seq = afterESC, append(f.seq[:0], b)
		case b == 0xc2:
			f.state = afterC2
		case b < 0x20 && !bytes.ContainsRune([]byte("\a\b\t\n\r\x0e\x0f"), rune(b)), b == 0x7f:
			// dropped
		default:
			f.out = append(f.out, b)
		}
	case afterC2:
		f.state = ground
		switch {
		case b >= 0xa0 && b <= 0xbf: // U+00A0-U+00BF
			f.out = append(f.out, 0xc2, b)
		case b >= 0x80 && b <= 0x9f: // a C1 control: dropped
		default: // not UTF-8: the lone 0xC2 goes, so it can join nothing
			f.take(b)
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
			f.out = append(append(f.out, f.seq...), b)
			f.state = ground
		default:
			f.state = ground
		}
	case escIntermediate:
		switch {
		case b >= 0x20 && b <= 0x2f && len(f.seq) < maxSeq:
			f.seq = append(f.seq, b)
		case b >= 0x30 && b <= 0x7e:
			f.out = append(append(f.out, f.seq...), b)
			f.state = ground
		default:
			f.state = ground
		}
	case csi:
		switch {
		case b >= 0x20 && b <= 0x3f && len(f.seq) >= maxSeq:
			f.state = csiDropped
		case b >= 0x20 && b <= 0x3f:
			f.seq = append(f.seq, b)
		case b >= 0x40 && b <= 0x7e:
			if !answersBack(f.seq, b) {
				f.out = append(append(f.out, f.seq...), b)
			}
			f.state = ground
		default:
			f.state = ground
		}
	case csiDropped:
		if b < 0x20 || b > 0x3f {
			f.state = ground
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

// answersBack says whether a CSI sequence asks the terminal to report
// something (the answer would arrive as typed input) or to act on its
// window: device status (n), device attributes (c), window operations
// (t), parameter reports (x), mode reports (p after '$') and version
// reports (q after '>').
func answersBack(seq []byte, final byte) bool {
	switch final {
	case 'n', 'c', 't', 'x':
		return true
	case 'p':
		return bytes.IndexByte(seq, '$') >= 0
	case 'q':
		return bytes.IndexByte(seq, '>') >= 0
	}
	return false
}
