package tunnel

import (
	"context"
	"net"
	"sync"

	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// StreamListener turns accepted streams of one kind into net.Conns, so that
// a standard server (net/http) can serve them: register it as the kind's
// Handler and give it to http.Server.Serve. The peer's identity travels
// with each conn (see ConnIdentity).
type StreamListener struct {
	conns  chan *StreamConn
	closed chan struct{}
	once   sync.Once
}

// NewStreamListener returns a listener with nothing accepted yet.
func NewStreamListener() *StreamListener {
	return &StreamListener{conns: make(chan *StreamConn), closed: make(chan struct{})}
}

// ServeStream hands st to Accept and holds it open until the server closes
// the conn (the session closes a stream when its handler returns).
func (l *StreamListener) ServeStream(ctx context.Context, st *Stream) {
	c := &StreamConn{Stream: st, done: make(chan struct{})}
	select {
	case l.conns <- c:
	case <-l.closed:
		_ = st.Reject("service shutting down")
		return
	case <-ctx.Done():
		return
	}
	select {
	case <-c.done:
	case <-st.Session().Done():
	}
}

// Accept waits for the next stream.
func (l *StreamListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

// Close stops accepting.
func (l *StreamListener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return nil
}

// Addr is a placeholder: streams have no address of their own.
func (l *StreamListener) Addr() net.Addr { return streamAddr{} }

// StreamConn is a Stream as a net.Conn.
type StreamConn struct {
	*Stream
	done chan struct{}
	once sync.Once
}

// Close closes the stream and releases its handler.
func (c *StreamConn) Close() error {
	err := c.Stream.Close()
	c.once.Do(func() { close(c.done) })
	return err
}

// LocalAddr is the session's local address.
func (c *StreamConn) LocalAddr() net.Addr { return c.Session().LocalAddr() }

// RemoteAddr is the session's remote address.
func (c *StreamConn) RemoteAddr() net.Addr { return c.Session().RemoteAddr() }

// ConnIdentity is the peer identity of a conn from a StreamListener; ok is
// false for any other conn.
func ConnIdentity(c net.Conn) (wire.Identity, bool) {
	sc, ok := c.(*StreamConn)
	if !ok {
		return wire.Identity{}, false
	}
	return sc.Session().Peer(), true
}

var _ net.Conn = (*StreamConn)(nil)

type streamAddr struct{}

func (streamAddr) Network() string { return "tunnel" }
func (streamAddr) String() string  { return "tunnel" }
