package tunnel

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

// quicTransport is a Session over one QUIC connection.
type quicTransport struct {
	conn *quic.Conn
}

func (q *quicTransport) open(ctx context.Context) (rawStream, error) {
	s, err := q.conn.OpenStream()
	var limitV quic.StreamLimitReachedError
	var limitP *quic.StreamLimitReachedError
	if errors.As(err, &limitV) || errors.As(err, &limitP) {
		// The peer has not yet returned credit for streams we closed; wait
		// briefly for it rather than fail a stream under our own limit.
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

func (q *quicTransport) accept(ctx context.Context) (rawStream, error) {
	s, err := q.conn.AcceptStream(ctx)
	if err != nil {
		return nil, err
	}
	return quicStream{s}, nil
}

func (q *quicTransport) afterDone(f func()) { context.AfterFunc(q.conn.Context(), f) }

func (q *quicTransport) close(reason string) error {
	return q.conn.CloseWithError(0, reason)
}

// peerClosed cannot happen on QUIC (the reason travels in the close
// frame); a KindClose stream there is closed like any session end.
func (q *quicTransport) peerClosed(reason string) {
	_ = q.conn.CloseWithError(0, "peer closed: "+reason)
}

func (q *quicTransport) done() <-chan struct{} { return q.conn.Context().Done() }
func (q *quicTransport) err() error            { return context.Cause(q.conn.Context()) }
func (q *quicTransport) rtt() time.Duration    { return q.conn.ConnectionStats().SmoothedRTT }
func (q *quicTransport) localAddr() net.Addr   { return q.conn.LocalAddr() }
func (q *quicTransport) remoteAddr() net.Addr  { return q.conn.RemoteAddr() }
func (q *quicTransport) name() string          { return TransportQUIC }

// quicStream adapts a quic-go stream: Close on it ends only our direction.
type quicStream struct{ *quic.Stream }

func (s quicStream) closeWrite() error { return s.Stream.Close() }

func (s quicStream) discard(time.Duration) { s.CancelRead(0) }

func (s quicStream) close() error {
	s.CancelRead(0)
	return s.Stream.Close()
}

// dialQUIC establishes a QUIC session and waits for the server's welcome,
// which proves the server accepted our certificate.
func dialQUIC(ctx context.Context, addr string, tlsConf *tls.Config, cfg Config) (*Session, error) {
	conn, err := quic.DialAddr(ctx, addr, tlsConf, cfg.quic())
	if err != nil {
		return nil, fmt.Errorf("quic handshake with %s: %w", addr, err)
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
		return nil, fmt.Errorf("quic session with %s: waiting for welcome: %w", addr, err)
	}
	s := newSession(&quicTransport{conn: conn}, cfg)
	s.welcome = wel
	return s, nil
}

// serveQUIC accepts QUIC connections until ln closes, handing each
// established session to l.
func (l *Listener) serveQUIC(ln *quic.Listener) {
	for {
		conn, err := ln.Accept(context.Background())
		if err != nil {
			l.loopStopped(l.quicH, err)
			return
		}
		go func() {
			cs := conn.ConnectionState().TLS
			id, err := l.sc.authorize(cs) // already checked in VerifyConnection
			if err != nil {
				_ = conn.CloseWithError(1, "unauthorized")
				return
			}
			us, err := conn.OpenUniStream()
			if err == nil {
				err = wire.WriteWelcome(us, wire.Welcome{Identity: id, ServerVersion: l.sc.ServerVersion})
				_ = us.Close()
			}
			if err != nil {
				l.log.Warn("tunnel: sending welcome failed", "transport", TransportQUIC, "remote", conn.RemoteAddr(), "err", err)
				_ = conn.CloseWithError(0, "welcome failed")
				return
			}
			s := newSession(&quicTransport{conn: conn}, l.cfg)
			s.peer, s.cert = id, cs.PeerCertificates[0]
			l.deliver(s)
		}()
	}
}
