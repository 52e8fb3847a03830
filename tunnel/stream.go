package tunnel

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/polecat-sidecar/sidecar/tunnel/internal/connection"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// Stream is one bidirectional channel within a Session. It supports
// half-close: CloseWrite ends this direction while the other still reads.
// Read and Write may be used from different goroutines.
type Stream struct {
	raw     connection.Stream
	sess    *Session
	hdr     wire.Header
	opener  bool
	release func() // gives back the stream's place under the limits

	// mu guards the one-time preamble: the header (opener) or the verdict
	// (acceptor), sent before our first bytes. Its sender holds sending
	// while it writes it.
	mu       sync.Mutex
	sent     bool
	sendErr  error
	sending  sync.Mutex
	readOnce sync.Once
	readErr  error
	closed   atomic.Bool
}

// Kind is the stream's kind, from its header.
func (st *Stream) Kind() string { return st.hdr.Kind }

// Header is the stream's header as the opener sent it.
func (st *Stream) Header() wire.Header { return st.hdr }

// DecodeMeta decodes the header's metadata into v. Unknown fields are an
// error: metadata crosses a trust boundary.
func (st *Stream) DecodeMeta(v any) error {
	if len(st.hdr.Meta) == 0 {
		return nil
	}
	d := json.NewDecoder(bytes.NewReader(st.hdr.Meta))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return fmt.Errorf("tunnel: %s stream metadata: %w", st.hdr.Kind, err)
	}
	return nil
}

// DecodeRequest is how a handler begins: it decodes st's metadata as a T
// (see DecodeMeta) and checks it with validate, when not nil. If either
// fails it refuses st with the error, which the opener reads as the
// reason, and ok is false.
func DecodeRequest[T any](st *Stream, validate func(T) error) (req T, ok bool) {
	err := st.DecodeMeta(&req)
	if err == nil && validate != nil {
		err = validate(req)
	}
	if err != nil {
		_ = st.Reject(err.Error())
		return req, false
	}
	return req, true
}

// Session is the session the stream belongs to (for the peer's identity).
func (st *Stream) Session() *Session { return st.sess }

// preamble returns the bytes that must precede our first write.
func (st *Stream) preamble() []byte {
	if st.opener {
		b, _ := st.hdr.MarshalBinary() // validated in OpenStream
		return b
	}
	return []byte{wire.VerdictAccepted}
}

// sendPreamble sends the preamble, prefixed to p, once. It reports how many
// of p's bytes were written. When another call is sending it, a caller
// about to write (ordered) waits for that write to end, so that its bytes
// follow the preamble; a Read or Close does not: a Read must run while a
// first Write larger than the flow-control window waits for the peer to
// be read, and a Close may be what ends such a Write.
func (st *Stream) sendPreamble(p []byte, ordered bool) (n int, done bool, err error) {
	st.mu.Lock()
	if st.sent {
		st.mu.Unlock()
		if ordered { // wait until the preamble's sender lets go
			st.sending.Lock()
			st.sending.Unlock()
		}
		st.mu.Lock()
		err := st.sendErr
		st.mu.Unlock()
		return 0, false, err
	}
	st.sent = true
	st.sending.Lock()
	defer st.sending.Unlock()
	st.mu.Unlock()
	pre := st.preamble()
	m, err := st.raw.Write(append(pre, p...))
	if err != nil {
		st.mu.Lock()
		st.sendErr = err
		st.mu.Unlock()
	}
	return max(m-len(pre), 0), true, err
}

// Write writes p to the peer.
func (st *Stream) Write(p []byte) (int, error) {
	n, done, err := st.sendPreamble(p, true)
	if done || err != nil {
		return n, err
	}
	return st.raw.Write(p)
}

// Read reads from the peer. On the opening side the first Read also
// receives the peer's verdict: a *wire.RemoteError if it refused the stream.
func (st *Stream) Read(p []byte) (int, error) {
	if st.opener {
		// A peer that refused the stream, or closed it before reading all
		// we sent, stopped reading it: our write failed (on QUIC with a
		// bare "canceled by remote with error code 0"), but what the peer
		// sent, its verdict first, is still here to read.
		if _, _, err := st.sendPreamble(nil, false); err != nil && !connection.PeerStoppedReading(err) {
			return 0, err
		}
		st.readOnce.Do(func() { st.readErr = wire.ReadVerdict(st.raw, st.hdr.Kind) })
		if st.readErr != nil {
			return 0, st.readErr
		}
	}
	return st.raw.Read(p)
}

// CloseWrite ends our direction of the stream; the peer reads EOF while we
// may still read.
func (st *Stream) CloseWrite() error {
	if _, _, err := st.sendPreamble(nil, true); err != nil {
		return err
	}
	return st.raw.CloseWrite()
}

// Close ends the stream in both directions. It is safe to call more than
// once.
func (st *Stream) Close() error {
	if st.closed.Swap(true) {
		return nil
	}
	st.release()
	_, _, _ = st.sendPreamble(nil, false)
	return st.raw.Close()
}

// Reject refuses an accepted stream with a reason the opener sees, and
// closes it. It fails if bytes were already written.
func (st *Stream) Reject(reason string) error {
	if st.opener {
		return errors.New("tunnel: Reject called on the opening side")
	}
	if reason == "" {
		reason = "refused"
	}
	st.mu.Lock()
	already := st.sent
	st.sent = true
	st.mu.Unlock()
	if already {
		return fmt.Errorf("tunnel: cannot reject %s stream: already accepted", st.hdr.Kind)
	}
	err := wire.WriteVerdict(st.raw, reason)
	if st.closed.Swap(true) {
		return err
	}
	st.release()
	_ = st.raw.CloseWrite()
	return errors.Join(err, st.raw.Close())
}

// SetDeadline sets the read and write deadlines.
func (st *Stream) SetDeadline(t time.Time) error { return st.raw.SetDeadline(t) }

// SetReadDeadline sets the read deadline.
func (st *Stream) SetReadDeadline(t time.Time) error { return st.raw.SetReadDeadline(t) }

// SetWriteDeadline sets the write deadline.
func (st *Stream) SetWriteDeadline(t time.Time) error { return st.raw.SetWriteDeadline(t) }
