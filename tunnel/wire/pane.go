package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// The pane channel (KindPane, hostd -> agent) shows an operator the
// polecat's tmux pane; the metadata is a PaneRequest. On attach hostd
// writes frames: a type (PaneInput: keys typed; PaneResize), a 2-byte
// big-endian length (1..MaxPaneFrame), the keys or, for a resize,
// columns and rows (2 bytes each); closing its side detaches.
// docs/protocol.md, "Pane (pane)".
const (
	// PanePeek: the agent writes the pane's last Lines lines as text
	// (capture-pane -J) and, with Follow, what is added to them, until
	// hostd closes the stream.
	PanePeek = "peek"
	// PaneAttach: the agent runs a tmux client on the polecat's session
	// in a terminal of Cols x Rows (read-only unless Write) and copies its
	// output to the stream as it comes.
	PaneAttach = "attach"

	// PaneInput and PaneResize are the attach frames' types.
	PaneInput  byte = 'i'
	PaneResize byte = 'r'
	// MaxPaneFrame bounds one frame's payload.
	MaxPaneFrame = 4 << 10
	// MaxPeekLines bounds what peek captures.
	MaxPeekLines = 100_000
)

// PaneRequest is a pane stream's metadata.
type PaneRequest struct {
	// Op is PanePeek or PaneAttach.
	Op string `json:"op"`
	// Lines is how many lines peek shows (scrollback included).
	Lines int `json:"lines,omitempty"`
	// Follow keeps peek going with what the pane adds.
	Follow bool `json:"follow,omitempty"`
	// Write lets the attached operator type (tmux attach without -r).
	Write bool `json:"write,omitempty"`
	// Cols and Rows are the operator's terminal size for attach.
	Cols uint16 `json:"cols,omitempty"`
	Rows uint16 `json:"rows,omitempty"`
}

// Validate checks a request as the agent receives it.
func (r PaneRequest) Validate() error {
	switch r.Op {
	case PanePeek:
		if r.Lines < 1 || r.Lines > MaxPeekLines {
			return fmt.Errorf("pane: peek takes 1-%d lines", MaxPeekLines)
		}
	case PaneAttach:
		if r.Cols == 0 || r.Rows == 0 {
			return errors.New("pane: attach needs the terminal's size")
		}
	default:
		return fmt.Errorf("pane: unknown operation %q (peek, attach)", r.Op)
	}
	return nil
}

// WritePaneFrame writes one attach frame.
func WritePaneFrame(w io.Writer, typ byte, payload []byte) error {
	if len(payload) == 0 || len(payload) > MaxPaneFrame {
		return fmt.Errorf("pane frame of %d bytes (1-%d)", len(payload), MaxPaneFrame)
	}
	b := make([]byte, 3+len(payload))
	b[0] = typ
	binary.BigEndian.PutUint16(b[1:3], uint16(len(payload)))
	copy(b[3:], payload)
	_, err := w.Write(b)
	return err
}

// ResizePayload is a PaneResize frame's payload.
func ResizePayload(cols, rows uint16) []byte {
	b := make([]byte, 4)
	binary.BigEndian.PutUint16(b, cols)
	binary.BigEndian.PutUint16(b[2:], rows)
	return b
}

// ReadPaneFrame reads one attach frame into buf (MaxPaneFrame bytes at
// least) and returns its type and payload; a resize comes back as its
// size.
func ReadPaneFrame(r io.Reader, buf []byte) (typ byte, payload []byte, cols, rows uint16, err error) {
	var h [3]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return 0, nil, 0, 0, err
	}
	n := int(binary.BigEndian.Uint16(h[1:]))
	if n == 0 || n > MaxPaneFrame || n > len(buf) {
		return 0, nil, 0, 0, fmt.Errorf("pane frame of %d bytes (1-%d)", n, MaxPaneFrame)
	}
	if _, err := io.ReadFull(r, buf[:n]); err != nil {
		return 0, nil, 0, 0, fmt.Errorf("pane frame cut short: %w", err)
	}
	switch h[0] {
	case PaneInput:
		return PaneInput, buf[:n], 0, 0, nil
	case PaneResize:
		if n != 4 {
			return 0, nil, 0, 0, fmt.Errorf("resize frame of %d bytes, want 4", n)
		}
		cols, rows = binary.BigEndian.Uint16(buf), binary.BigEndian.Uint16(buf[2:])
		if cols == 0 || rows == 0 {
			return 0, nil, 0, 0, errors.New("resize to nothing")
		}
		return PaneResize, nil, cols, rows, nil
	}
	return 0, nil, 0, 0, fmt.Errorf("unknown pane frame type %q", h[0])
}
