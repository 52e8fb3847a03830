package pane

import (
	"bytes"
	"io"
	"testing"

	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// TestRelayFrames: with write off no key reaches the agent, only
// resizes; with write on both do, in order; a malformed frame ends it.
func TestRelayFrames(t *testing.T) {
	var operator bytes.Buffer
	_ = wire.WritePaneFrame(&operator, wire.PaneInput, []byte("rm -rf /\r"))
	_ = wire.WritePaneFrame(&operator, wire.PaneResize, wire.ResizePayload(100, 30))
	_ = wire.WritePaneFrame(&operator, wire.PaneInput, []byte("\x1b[12;1R"))
	frames := operator.Bytes()
	var resizeOnly, all bytes.Buffer
	_ = wire.WritePaneFrame(&resizeOnly, wire.PaneResize, wire.ResizePayload(100, 30))
	all.Write(frames)
	for _, tc := range []struct {
		name    string
		in      []byte
		write   bool
		want    []byte
		wantEOF bool // else an error about the frame
	}{
		{"read-only", frames, false, resizeOnly.Bytes(), true},
		{"read-write", frames, true, all.Bytes(), true},
		{"malformed", append([]byte{'?', 0, 1, 'x'}, frames...), true, nil, false},
	} {
		var agent bytes.Buffer
		err := relayFrames(&agent, bytes.NewReader(tc.in), tc.write)
		if !bytes.Equal(agent.Bytes(), tc.want) {
			t.Errorf("%s: the agent got %q, want %q", tc.name, agent.Bytes(), tc.want)
		}
		if err == nil || (err == io.EOF) != tc.wantEOF {
			t.Errorf("%s: ended with %v", tc.name, err)
		}
	}
}
