package connection

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/polecat-sidecar/sidecar/tunnel/internal/yamux"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// TCP is a tunnel over TLS 1.3 on TCP, multiplexed by yamux. yamux's own
// keepalive is off: TCP pings on its own schedule so that it can also
// report the round-trip time.
type TCP struct {
	conn  *tls.Conn
	ys    *yamux.Session
	rttNs atomic.Int64

	mu     sync.Mutex
	cause  error
	over   bool     // the pinger has seen the session end
	onDone []func() // run then
}

// DialTCP establishes a TLS+yamux connection and waits for the welcome.
func DialTCP(ctx context.Context, addr string, tlsConf *tls.Config, cfg Config) (*TCP, wire.Welcome, error) {
	ctx, cancel := context.WithTimeout(ctx, cfg.HandshakeTimeout)
	defer cancel()
	var d net.Dialer
	raw, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, wire.Welcome{}, fmt.Errorf("tcp connect to %s: %w", addr, err)
	}
	setKeepAlive(raw, cfg.KeepAlive)
	conn := tls.Client(raw, tlsConf)
	if err := conn.HandshakeContext(ctx); err != nil {
		_ = raw.Close()
		return nil, wire.Welcome{}, fmt.Errorf("tls handshake with %s: %w", addr, err)
	}
	deadline, _ := ctx.Deadline()
	_ = conn.SetReadDeadline(deadline)
	wel, err := wire.ReadWelcome(conn)
	_ = conn.SetReadDeadline(time.Time{})
	if err != nil {
		_ = conn.Close()
		return nil, wire.Welcome{}, fmt.Errorf("tcp session with %s: waiting for welcome: %w", addr, err)
	}
	ys, err := yamux.Client(conn, cfg.yamux())
	if err != nil {
		_ = conn.Close()
		return nil, wire.Welcome{}, fmt.Errorf("tcp session with %s: starting yamux: %w", addr, err)
	}
	return newTCP(conn, ys, cfg), wel, nil
}

// HandshakeTCP runs the server's TLS handshake on an accepted connection,
// within the handshake timeout; on failure the connection is closed.
func HandshakeTCP(raw net.Conn, conf *tls.Config, cfg Config) (*tls.Conn, error) {
	setKeepAlive(raw, cfg.KeepAlive)
	conn := tls.Server(raw, conf)
	ctx, cancel := context.WithTimeout(context.Background(), cfg.HandshakeTimeout)
	defer cancel()
	if err := conn.HandshakeContext(ctx); err != nil {
		_ = raw.Close()
		return nil, err
	}
	return conn, nil
}

// WelcomeTCP sends the server's welcome on a connection through
// HandshakeTCP and starts yamux on it; the connection is closed if either
// fails.
func WelcomeTCP(conn *tls.Conn, w wire.Welcome, cfg Config) (*TCP, error) {
	_ = conn.SetWriteDeadline(time.Now().Add(cfg.HandshakeTimeout))
	err := wire.WriteWelcome(conn, w)
	_ = conn.SetWriteDeadline(time.Time{})
	if err != nil {
		_ = conn.Close()
		return nil, err
	}
	ys, err := yamux.Server(conn, cfg.yamux())
	if err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("starting yamux: %w", err)
	}
	return newTCP(conn, ys, cfg), nil
}

func setKeepAlive(c net.Conn, every time.Duration) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
		_ = tc.SetKeepAliveConfig(net.KeepAliveConfig{Enable: true, Idle: every, Interval: every, Count: 5})
	}
}

func newTCP(conn *tls.Conn, ys *yamux.Session, cfg Config) *TCP {
	t := &TCP{conn: conn, ys: ys}
	go t.pinger(cfg.KeepAlive, cfg.IdleTimeout)
	return t
}

// pinger pings until the session ends, then runs the AfterDone functions
// (it is the one goroutine a TCP session has anyway).
func (t *TCP) pinger(every, idle time.Duration) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	defer t.finish()
	for {
		rtt, err := t.ys.Ping()
		if err != nil {
			t.setCause(fmt.Errorf("tunnel: peer did not answer a ping within %v: %w", idle, err))
			_ = t.ys.Close()
			return
		}
		t.rttNs.Store(int64(rtt))
		select {
		case <-t.ys.CloseChan():
			return
		case <-tick.C:
		}
	}
}

func (t *TCP) finish() {
	t.mu.Lock()
	t.over = true
	fs := t.onDone
	t.onDone = nil
	t.mu.Unlock()
	for _, f := range fs {
		f()
	}
}

// AfterDone runs f once the session has ended (at once if it has),
// without a goroutine of its own.
func (t *TCP) AfterDone(f func()) {
	t.mu.Lock()
	if !t.over {
		t.onDone = append(t.onDone, f)
		t.mu.Unlock()
		return
	}
	t.mu.Unlock()
	f()
}

func (t *TCP) setCause(err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.cause == nil {
		t.cause = err
	}
}

// Open opens a stream.
func (t *TCP) Open(ctx context.Context) (Stream, error) {
	s, err := t.ys.OpenStream()
	if err != nil {
		return nil, err
	}
	return yamuxStream{s}, nil
}

// Accept waits for the peer's next stream.
func (t *TCP) Accept(ctx context.Context) (Stream, error) {
	s, err := t.ys.AcceptStreamWithContext(ctx)
	if err != nil {
		return nil, err
	}
	return yamuxStream{s}, nil
}

// Close tells the peer why in a KindClose stream (yamux has no close
// reason of its own), waits briefly for the peer to end the session on
// hearing it, and closes.
func (t *TCP) Close(reason string) error {
	t.setCause(fmt.Errorf("tunnel: session closed: %s", reason))
	if s, err := t.ys.OpenStream(); err == nil {
		_ = s.SetWriteDeadline(time.Now().Add(goodbyeWait))
		if h, err := wire.NewHeader(wire.KindClose, wire.Goodbye{Reason: wire.TruncateReason(reason)}); err == nil {
			if b, err := h.MarshalBinary(); err == nil {
				_, _ = s.Write(b)
			}
		}
		_ = s.Close()
		select {
		case <-t.ys.CloseChan():
		case <-time.After(goodbyeWait):
		}
	}
	return t.ys.Close()
}

// PeerClosed ends the session because the peer said it is closing.
func (t *TCP) PeerClosed(reason string) {
	t.setCause(&PeerClosedError{Reason: reason})
	_ = t.ys.Close()
}

// goodbyeWait bounds how long closing a TCP session waits for the peer to
// take the goodbye.
const goodbyeWait = 200 * time.Millisecond

// Done is closed when the session has ended.
func (t *TCP) Done() <-chan struct{} { return t.ys.CloseChan() }

// Err says why the session ended.
func (t *TCP) Err() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.cause != nil {
		return t.cause
	}
	return errors.New("tunnel: tcp session ended")
}

// RTT is the round-trip time of the latest ping.
func (t *TCP) RTT() time.Duration { return time.Duration(t.rttNs.Load()) }

// LocalAddr is our TCP address.
func (t *TCP) LocalAddr() net.Addr { return t.conn.LocalAddr() }

// RemoteAddr is the peer's TCP address.
func (t *TCP) RemoteAddr() net.Addr { return t.conn.RemoteAddr() }

// Name is NameTCP.
func (t *TCP) Name() string { return NameTCP }

// yamuxStream adapts a yamux stream, whose Close is already a half-close.
// yamux cannot abort the peer's direction, so a full close reads and drops
// what the peer still sends for closeDrain; the stream is reclaimed when
// the peer closes too, or after the close timeout (Config.yamux).
type yamuxStream struct{ *yamux.Stream }

func (s yamuxStream) CloseWrite() error { return s.Stream.Close() }

func (s yamuxStream) Close() error {
	err := s.Stream.Close()
	go s.Discard(closeDrain)
	return err
}

// Discard reads and drops what the peer sends for at most d, then frees
// the stream's receive buffer: yamux keeps a closed stream, buffer and
// all, until the peer closes too or the close timeout passes, even after
// the session has ended.
func (s yamuxStream) Discard(d time.Duration) {
	_ = s.Stream.SetReadDeadline(time.Now().Add(d))
	_, _ = io.Copy(io.Discard, s.Stream)
	s.Stream.Shrink()
}

// closeDrain bounds how long a closed yamux stream is drained.
const closeDrain = 5 * time.Second
