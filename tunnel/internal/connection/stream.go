// Package connection is the tunnel's two transports, which package tunnel
// sees only through its transport interface: QUIC (quic-go), and TLS 1.3
// with yamux over TCP when UDP is blocked. It holds their TLS settings,
// their handshakes up to the server's welcome, their streams with
// half-close, and their round-trip measurement; who may connect, stream
// headers and limits are package tunnel's.
package connection

import (
	"errors"
	"io"
	"time"
)

// ErrStreamLimit is the error of opening a stream over the limit; package
// tunnel exports it.
var ErrStreamLimit = errors.New("tunnel: stream limit reached; close finished streams or raise max_streams")

// Stream is one transport stream with half-close.
type Stream interface {
	io.ReadWriter
	// CloseWrite ends our direction; the peer reads EOF.
	CloseWrite() error
	// Close ends our direction and stops reading.
	Close() error
	// Discard throws away what the peer sends, for at most d, so that a
	// stream we will not read holds no buffer.
	Discard(d time.Duration)
	SetDeadline(time.Time) error
	SetReadDeadline(time.Time) error
	SetWriteDeadline(time.Time) error
}
