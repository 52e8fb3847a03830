package connection

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// Transport names, as package tunnel exports them.
const (
	NameQUIC = "quic"
	NameTCP  = "tcp"
)

// QUIC is a tunnel over one QUIC connection.
type QUIC struct {
	conn *quic.Conn
}

// DialQUIC establishes a QUIC connection and waits for the server's
// welcome, which proves the server accepted our certificate.
func DialQUIC(ctx context.Context, addr string, tlsConf *tls.Config, cfg Config) (*QUIC, wire.Welcome, error) {
	conn, err := quic.DialAddr(ctx, addr, tlsConf, cfg.QUIC())
	if err != nil {
		return nil, wire.Welcome{}, fmt.Errorf("quic handshake with %s: %w", addr, err)
	}
	wel, err := func() (wire.Welcome, error) {
		ctx, cancel := context.WithTimeout(ctx, cfg.HandshakeTimeout)
		defer cancel()
		us, err := conn.AcceptUniStream(ctx)
		if err != nil {
			if cause := context.Cause(conn.Context()); cause != nil {
				return wire.Welcome{}, cause
			}
			return wire.Welcome{}, err
		}
		_ = us.SetReadDeadline(time.Now().Add(cfg.HandshakeTimeout))
		return wire.ReadWelcome(us)
	}()
	if err != nil {
		_ = conn.CloseWithError(0, "no welcome")
		return nil, wire.Welcome{}, fmt.Errorf("quic session with %s: waiting for welcome: %w", addr, err)
	}
	return &QUIC{conn: conn}, wel, nil
}

// WelcomeQUIC sends the server's welcome on an accepted connection, whose
// client certificate was verified during the handshake; the connection
// is closed if it cannot be sent.
func WelcomeQUIC(conn *quic.Conn, w wire.Welcome) (*QUIC, error) {
	us, err := conn.OpenUniStream()
	if err == nil {
		err = wire.WriteWelcome(us, w)
		_ = us.Close()
	}
	if err != nil {
		_ = conn.CloseWithError(0, "welcome failed")
		return nil, err
	}
	return &QUIC{conn: conn}, nil
}

// Open opens a stream. A peer that has not yet returned credit for
// streams we closed is waited for, briefly, rather than a stream under our
// own limit failing.
func (q *QUIC) Open(ctx context.Context) (Stream, error) {
	s, err := q.conn.OpenStream()
	var limitV quic.StreamLimitReachedError
	var limitP *quic.StreamLimitReachedError
	if errors.As(err, &limitV) || errors.As(err, &limitP) {
		ctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		s, err = q.conn.OpenStreamSync(ctx)
		if err != nil && ctx.Err() != nil {
			return nil, ErrStreamLimit
		}
	}
	if err != nil {
		return nil, err
	}
	return quicStream{s}, nil
}

// Accept waits for the peer's next stream.
func (q *QUIC) Accept(ctx context.Context) (Stream, error) {
	s, err := q.conn.AcceptStream(ctx)
	if err != nil {
		return nil, err
	}
	return quicStream{s}, nil
}

// AfterDone runs f once the connection has ended.
func (q *QUIC) AfterDone(f func()) { context.AfterFunc(q.conn.Context(), f) }

// Close ends the connection, the reason in its close frame.
func (q *QUIC) Close(reason string) error {
	return q.conn.CloseWithError(0, reason)
}

// PeerClosed cannot happen on QUIC (the reason travels in the close
// frame); a KindClose stream there is closed like any session end.
func (q *QUIC) PeerClosed(reason string) {
	_ = q.conn.CloseWithError(0, "peer closed: "+reason)
}

// Done is closed when the connection has ended.
func (q *QUIC) Done() <-chan struct{} { return q.conn.Context().Done() }

// Err says why the connection ended.
func (q *QUIC) Err() error { return context.Cause(q.conn.Context()) }

// PacketsReceived counts the packets received on this connection so far
// (quic-go counts those that decrypted, and no duplicates).
func (q *QUIC) PacketsReceived() uint64 { return q.conn.ConnectionStats().PacketsReceived }

// PTO is the probe timeout RFC 9002 §6.2.1 derives from the path's round
// trips (with the default 25 ms maximum acknowledgement delay).
func (q *QUIC) PTO() time.Duration {
	st := q.conn.ConnectionStats()
	return st.SmoothedRTT + max(4*st.MeanDeviation, time.Millisecond) + 25*time.Millisecond
}

// RTT is quic-go's smoothed round-trip time.
func (q *QUIC) RTT() time.Duration { return q.conn.ConnectionStats().SmoothedRTT }

// LocalAddr is our UDP address.
func (q *QUIC) LocalAddr() net.Addr { return q.conn.LocalAddr() }

// RemoteAddr is the peer's UDP address.
func (q *QUIC) RemoteAddr() net.Addr { return q.conn.RemoteAddr() }

// Name is NameQUIC.
func (q *QUIC) Name() string { return NameQUIC }

// PeerStoppedReading reports whether err is a write's failure because the
// peer stopped reading the stream (QUIC's STOP_SENDING: the peer refused or
// closed the stream; on TCP the peer drains instead, and writes succeed).
// What the peer sent before, its verdict first, is still there to read.
func PeerStoppedReading(err error) bool {
	var se *quic.StreamError
	return errors.As(err, &se) && se.Remote
}

// quicStream adapts a quic-go stream: Close on it ends only our direction.
type quicStream struct{ *quic.Stream }

func (s quicStream) CloseWrite() error { return s.Stream.Close() }

func (s quicStream) Discard(time.Duration) { s.CancelRead(0) }

func (s quicStream) Close() error {
	s.CancelRead(0)
	return s.Stream.Close()
}
