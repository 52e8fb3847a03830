package wire

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"

	"github.com/polecat-sidecar/sidecar/internal/jsonscan"
)

// The relay channel (KindRelay) carries one gt/bd command as frames both
// ways: a type (RelayFrame*), a 4-byte big-endian length (at most
// MaxRelayFramePayload), the payload. The shim sends a request, stdin,
// its end and signals; gt-agent answers Attached (or Error), copies the
// bytes both ways, and sends Gone and half-closes when the shim goes (a
// half-close after StdinClose alone is not that: the command runs on);
// hostd sends output, then one Exit or an Error. docs/protocol.md, "Relay".
const (
	RelayFrameRequest    byte = 'Q' // shim -> host: RelayRequest (JSON)
	RelayFrameStdin      byte = 'I' // shim -> host: stdin bytes
	RelayFrameStdinClose byte = 'C' // shim -> host: stdin reached EOF
	RelayFrameSignal     byte = 'S' // shim -> host: one byte, a signal number
	RelayFrameAttached   byte = 'A' // agent -> shim: the tunnel stream is open
	RelayFrameGone       byte = 'G' // agent -> host: the shim's connection ended
	RelayFrameStdout     byte = 'O' // host -> shim: stdout bytes
	RelayFrameStderr     byte = 'E' // host -> shim: stderr bytes
	RelayFrameExit       byte = 'X' // host -> shim: RelayExit (JSON), last frame
	RelayFrameError      byte = '!' // agent or host -> shim: UTF-8 reason, last frame
)

// Relay limits.
const (
	// MaxRelayFramePayload bounds one frame's payload.
	MaxRelayFramePayload = 1 << 20
	// RelayChunk is the largest data chunk a sender puts in one frame.
	RelayChunk = 32 << 10
	// maxRelayArgs bounds the number of arguments.
	maxRelayArgs = 4096
	// maxRelayEnv bounds the number of environment entries.
	maxRelayEnv = 256
	// maxRelayPath bounds the working directory.
	maxRelayPath = 4096
)

// RelayEnv is the environment a shim sends by default, and hostd accepts
// by default: terminal and locale settings, nothing identity-like.
var RelayEnv = []string{"TERM", "COLUMNS", "LINES", "NO_COLOR", "CLICOLOR", "CLICOLOR_FORCE", "FORCE_COLOR", "COLORTERM", "LANG", "LC_ALL", "LC_CTYPE", "TZ"}

// RelayRequest is the command a shim asks to run. Arguments, the working
// directory and environment entries are bytes, not strings, so that
// non-UTF-8 values arrive exactly as typed.
type RelayRequest struct {
	// Argv is the command line; Argv[0] is "gt" or "bd".
	Argv [][]byte `json:"argv"`
	// Cwd is the shim's working directory in the container (informational:
	// on the host the command runs in the polecat's worktree, else its
	// rig's directory, else the town).
	Cwd []byte `json:"cwd,omitempty"`
	// Env holds KEY=VALUE entries from the shim's environment allowlist.
	Env [][]byte `json:"env,omitempty"`
}

// RelayExit is how the command ended.
type RelayExit struct {
	// Code is the exit status as a shell reports it: the exit code, or
	// 128+signal when a signal killed the command.
	Code int `json:"code"`
	// Signal is the signal that killed the command, or 0.
	Signal int `json:"signal,omitempty"`
}

// WriteRelayFrame writes one frame.
func WriteRelayFrame(w io.Writer, typ byte, payload []byte) error {
	if len(payload) > MaxRelayFramePayload {
		return fmt.Errorf("relay frame of %d bytes exceeds %d", len(payload), MaxRelayFramePayload)
	}
	var hdr [5]byte
	hdr[0] = typ
	binary.BigEndian.PutUint32(hdr[1:], uint32(len(payload)))
	if len(payload) <= 4096 {
		_, err := w.Write(append(hdr[:], payload...))
		return err
	}
	if _, err := w.Write(hdr[:]); err != nil {
		return err
	}
	_, err := w.Write(payload)
	return err
}

// RelayFrameWriter writes whole frames from several goroutines (output pumps,
// signals, the final status) without interleaving them.
type RelayFrameWriter struct {
	mu sync.Mutex
	w  io.Writer
}

// NewRelayFrameWriter writes frames to w.
func NewRelayFrameWriter(w io.Writer) *RelayFrameWriter { return &RelayFrameWriter{w: w} }

// Frame writes one frame.
func (fw *RelayFrameWriter) Frame(typ byte, payload []byte) error {
	fw.mu.Lock()
	defer fw.mu.Unlock()
	return WriteRelayFrame(fw.w, typ, payload)
}

// Copy sends r's bytes as frames of typ, in chunks of at most RelayChunk,
// as they arrive. It returns nil when r ends (however it ends), or the
// error that stopped a frame from being written.
func (fw *RelayFrameWriter) Copy(typ byte, r io.Reader) error {
	buf := make([]byte, RelayChunk)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			if werr := fw.Frame(typ, buf[:n]); werr != nil {
				return werr
			}
		}
		if err != nil {
			return nil
		}
	}
}

// RelayFrameReader reads frames, reusing one buffer: a payload is valid only
// until the next call.
type RelayFrameReader struct {
	r   io.Reader
	buf []byte
}

// NewRelayFrameReader reads frames from r.
func NewRelayFrameReader(r io.Reader) *RelayFrameReader { return &RelayFrameReader{r: r} }

// ErrRelayFrameTooLarge is returned for a frame whose length exceeds
// MaxRelayFramePayload; the stream cannot be resynchronised after it.
var ErrRelayFrameTooLarge = errors.New("relay frame exceeds the 1 MiB limit")

// Next reads the next frame. At a clean end between frames it returns
// io.EOF; a frame cut short is io.ErrUnexpectedEOF.
func (fr *RelayFrameReader) Next() (typ byte, payload []byte, err error) {
	var hdr [5]byte
	if _, err := io.ReadFull(fr.r, hdr[:]); err != nil {
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(hdr[1:])
	if n > MaxRelayFramePayload {
		return 0, nil, ErrRelayFrameTooLarge
	}
	if cap(fr.buf) < int(n) {
		fr.buf = make([]byte, n)
	}
	payload = fr.buf[:n]
	if _, err := io.ReadFull(fr.r, payload); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return 0, nil, err
	}
	return hdr[0], payload, nil
}

// EncodeRelayRequest validates and encodes a request for RelayFrameRequest:
// the JSON encoding/json gives, written without reflection (appendJSON;
// the tests hold the two equal), so that the shim calls nothing of
// encoding/json. The shim still links that package's initialisation and a
// few of its types, imported by this package's other messages; the linker
// leaves out its encoder and decoder.
func EncodeRelayRequest(req RelayRequest) ([]byte, error) {
	if err := req.validate(); err != nil {
		return nil, err
	}
	b := req.appendJSON(nil)
	if len(b) > MaxRelayFramePayload {
		return nil, fmt.Errorf("command line and environment too large (%d bytes encoded, limit %d)", len(b), MaxRelayFramePayload)
	}
	return b, nil
}

// appendJSON appends req as json.Marshal encodes it: byte slices as
// base64 strings (a nil one as null), cwd and env left out when empty.
func (req RelayRequest) appendJSON(b []byte) []byte {
	b = appendBytesList(append(b, `{"argv":`...), req.Argv)
	if len(req.Cwd) > 0 {
		b = appendBytes(append(b, `,"cwd":`...), req.Cwd)
	}
	if len(req.Env) > 0 {
		b = appendBytesList(append(b, `,"env":`...), req.Env)
	}
	return append(b, '}')
}

// appendBytesList appends list as a JSON array of base64 strings.
func appendBytesList(b []byte, list [][]byte) []byte {
	if list == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, x := range list {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendBytes(b, x)
	}
	return append(b, ']')
}

// appendBytes appends x as a JSON base64 string, or null when nil.
func appendBytes(b, x []byte) []byte {
	if x == nil {
		return append(b, "null"...)
	}
	b = base64.StdEncoding.AppendEncode(append(b, '"'), x)
	return append(b, '"')
}

// ErrMalformedRelayExit is a RelayFrameExit payload that is not
// {"code":N} or {"code":N,"signal":M}.
var ErrMalformedRelayExit = errors.New("malformed exit status")

// ParseRelayExit reads a RelayFrameExit payload as hostd writes it
// (json.Marshal of RelayExit), without reflection, for the shim. It takes
// the two fields in either order, with JSON's whitespace, and nothing
// else.
func ParseRelayExit(b []byte) (RelayExit, error) {
	var e RelayExit
	var seen [2]bool
	p := exitScanner{jsonscan.New(b)}
	if !p.Take('{') {
		return e, ErrMalformedRelayExit
	}
	for !p.Take('}') {
		if (seen[0] || seen[1]) && !p.Take(',') {
			return e, ErrMalformedRelayExit
		}
		key, ok := p.key()
		if !ok || !p.Take(':') {
			return e, ErrMalformedRelayExit
		}
		n, ok := p.int()
		switch {
		case !ok:
			return e, ErrMalformedRelayExit
		case key == "code" && !seen[0]:
			e.Code, seen[0] = n, true
		case key == "signal" && !seen[1]:
			e.Signal, seen[1] = n, true
		default:
			return e, ErrMalformedRelayExit
		}
	}
	if !seen[0] || !p.End() {
		return e, ErrMalformedRelayExit
	}
	return e, nil
}

// exitScanner reads the few JSON tokens ParseRelayExit accepts.
type exitScanner struct{ jsonscan.Scanner }

// key reads a string of lower-case ASCII letters.
func (p *exitScanner) key() (string, bool) {
	text, ok := p.Text()
	if !ok || len(text) == 0 {
		return "", false
	}
	for _, c := range text {
		if c < 'a' || c > 'z' {
			return "", false
		}
	}
	return string(text), true
}

// int reads a JSON integer of at most nine digits.
func (p *exitScanner) int() (int, bool) {
	text, integer := p.Number()
	if !integer || len(bytes.TrimPrefix(text, []byte("-"))) > 9 {
		return 0, false
	}
	n, err := strconv.Atoi(string(text))
	return n, err == nil
}

// DecodeRelayRequest decodes and validates a RelayFrameRequest payload. Unknown
// fields are an error.
func DecodeRelayRequest(b []byte) (RelayRequest, error) {
	var req RelayRequest
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(&req); err != nil {
		return RelayRequest{}, fmt.Errorf("malformed relay request: %w", err)
	}
	if d.More() {
		return RelayRequest{}, errors.New("malformed relay request: trailing data")
	}
	return req, req.validate()
}

func (req RelayRequest) validate() error {
	switch {
	case len(req.Argv) == 0:
		return errors.New("relay request has no command")
	case len(req.Argv) > maxRelayArgs:
		return fmt.Errorf("relay request has %d arguments, limit %d", len(req.Argv), maxRelayArgs)
	case len(req.Env) > maxRelayEnv:
		return fmt.Errorf("relay request has %d environment entries, limit %d", len(req.Env), maxRelayEnv)
	case len(req.Cwd) > maxRelayPath:
		return fmt.Errorf("relay request working directory is %d bytes, limit %d", len(req.Cwd), maxRelayPath)
	case bytes.IndexByte(req.Cwd, 0) >= 0:
		return errors.New("relay request working directory contains a NUL byte")
	}
	for i, a := range req.Argv {
		if bytes.IndexByte(a, 0) >= 0 {
			return fmt.Errorf("argument %d contains a NUL byte", i)
		}
	}
	for _, e := range req.Env {
		k, _, ok := bytes.Cut(e, []byte("="))
		if !ok || len(k) == 0 || bytes.IndexByte(e, 0) >= 0 {
			return fmt.Errorf("environment entry %q is not KEY=VALUE", truncate(e))
		}
	}
	return nil
}

func truncate(b []byte) []byte {
	if len(b) > 40 {
		return append(b[:40:40], "..."...)
	}
	return b
}
