package tunnel

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

// tcpTransport is a Session over TLS 1.3 on TCP, multiplexed by yamux.
// yamux's own keepalive is off: the transport pings on its own schedule so
// that it can also report the round-trip time.
type tcpTransport struct {
	conn  *tls.Conn
	ys    *yamux.Session
	rttNs atomic.Int64

	mu     sync.Mutex
	cause  error
	over   bool     // the pinger has seen the session end
	onDone []func() // run then
}

func newTCPTransport(conn *tls.Conn, ys *yamux.Session, cfg Config) *tcpTransport {
	t := &tcpTransport{conn: conn, ys: ys}
	go t.pinger(cfg.KeepAlive, cfg.IdleTimeout)
	return t
}

// pinger pings until the session ends, then runs the afterDone functions
// (it is the one goroutine a TCP session has anyway).
func (t *tcpTransport) pinger(every, idle time.Duration) {
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

func (t *tcpTransport) finish() {
	t.mu.Lock()
	t.over = true
	fs := t.onDone
	t.onDone = nil
	t.mu.Unlock()
	for _, f := range fs {
		f()
	}
}

func (t *tcpTransport) afterDone(f func()) {
	t.mu.Lock()
	if !t.over {
		t.onDone = append(t.onDone, f)
		t.mu.Unlock()
		return
	}
	t.mu.Unlock()
	f()
}

func (t *tcpTransport) setCause(err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.cause == nil {
		t.cause = err
	}
}

func (t *tcpTransport) open(ctx context.Context) (rawStream, error) {
	s, err := t.ys.OpenStream()
	if err != nil {
		return nil, err
	}
	return yamuxStream{s}, nil
}

func (t *tcpTransport) accept(ctx context.Context) (rawStream, error) {
	s, err := t.ys.AcceptStreamWithContext(ctx)
	if err != nil {
		return nil, err
	}
	return yamuxStream{s}, nil
}

// close tells the peer why in a KindClose stream (yamux has no close
// reason of its own), waits briefly for the peer to end the session on
// hearing it, and closes.
func (t *tcpTransport) close(reason string) error {
	t.setCause(fmt.Errorf("tunnel: session closed: %s", reason))
	if s, err := t.ys.OpenStream(); err == nil {
		_ = s.SetWriteDeadline(time.Now().Add(goodbyeWait))
		if h, err := wire.NewHeader(wire.KindClose, wire.Goodbye{Reason: truncateReason(reason)}); err == nil {
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

// peerClosed ends the session because the peer said it is closing.
func (t *tcpTransport) peerClosed(reason string) {
	t.setCause(fmt.Errorf("tunnel: peer closed the session: %s", reason))
	_ = t.ys.Close()
}

// goodbyeWait bounds how long closing a TCP session waits for the peer to
// take the goodbye.
const goodbyeWait = 200 * time.Millisecond

func (t *tcpTransport) done() <-chan struct{} { return t.ys.CloseChan() }

func (t *tcpTransport) err() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.cause != nil {
		return t.cause
	}
	return errors.New("tunnel: tcp session ended")
}

func (t *tcpTransport) rtt() time.Duration   { return time.Duration(t.rttNs.Load()) }
func (t *tcpTransport) localAddr() net.Addr  { return t.conn.LocalAddr() }
func (t *tcpTransport) remoteAddr() net.Addr { return t.conn.RemoteAddr() }
func (t *tcpTransport) name() string         { return TransportTCP }

// yamuxStream adapts a yamux stream, whose Close is already a half-close.
// yamux cannot abort the peer's direction, so a full close reads and drops
// what the peer still sends for closeDrain; the stream is reclaimed when
// the peer closes too, or after the close timeout (Config.yamux).
type yamuxStream struct{ *yamux.Stream }

func (s yamuxStream) closeWrite() error { return s.Stream.Close() }

func (s yamuxStream) close() error {
	err := s.Stream.Close()
	go s.discard(closeDrain)
	return err
}

// discard reads and drops what the peer sends for at most d, then frees
// the stream's receive buffer: yamux keeps a closed stream, buffer and
// all, until the peer closes too or the close timeout passes, even after
// the session has ended.
func (s yamuxStream) discard(d time.Duration) {
	_ = s.Stream.SetReadDeadline(time.Now().Add(d))
	_, _ = io.Copy(io.Discard, s.Stream)
	s.Stream.Shrink()
}

// closeDrain bounds how long a closed yamux stream is drained.
const closeDrain = 5 * time.Second

// dialTCP establishes a TLS+yamux session and waits for the welcome.
func dialTCP(ctx context.Context, addr string, tlsConf *tls.Config, cfg Config) (*Session, error) {
	ctx, cancel := context.WithTimeout(ctx, cfg.HandshakeTimeout)
	defer cancel()
	var d net.Dialer
	raw, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("tcp connect to %s: %w", addr, err)
	}
	setKeepAlive(raw, cfg.KeepAlive)
	conn := tls.Client(raw, tlsConf)
	if err := conn.HandshakeContext(ctx); err != nil {
		_ = raw.Close()
		return nil, fmt.Errorf("tls handshake with %s: %w", addr, err)
	}
	deadline, _ := ctx.Deadline()
	_ = conn.SetReadDeadline(deadline)
	wel, err := wire.ReadWelcome(conn)
	_ = conn.SetReadDeadline(time.Time{})
	if err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("tcp session with %s: waiting for welcome: %w", addr, err)
	}
	ys, err := yamux.Client(conn, cfg.yamux())
	if err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("tcp session with %s: starting yamux: %w", addr, err)
	}
	s := newSession(newTCPTransport(conn, ys, cfg), cfg)
	s.welcome = wel
	return s, nil
}

func setKeepAlive(c net.Conn, every time.Duration) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
		_ = tc.SetKeepAliveConfig(net.KeepAliveConfig{Enable: true, Idle: every, Interval: every, Count: 5})
	}
}

// serveTCP accepts TCP connections until ln closes. Each handshake runs in
// its own goroutine, bounded by the handshake timeout and by the handshake
// gate, so a slow or hostile client cannot hold up others. A failed accept
// (out of file descriptors) is retried after a backoff, never fatal.
func (l *Listener) serveTCP(ln net.Listener) {
	conf := l.sc.tcpTLS(l.log)
	failures := 0
	for {
		raw, err := ln.Accept()
		if err != nil {
			if l.isClosed() || errors.Is(err, net.ErrClosed) {
				l.loopStopped(l.tcpHealth, err)
				return
			}
			wait := acceptBackoff(failures)
			failures++
			l.tcpHealth.update(func(h *ListenerHealth) {
				h.AcceptErrors++
				h.LastError, h.LastErrorAt = err.Error(), time.Now()
			})
			if failures == 1 || failures%100 == 0 {
				l.log.Warn("tunnel: accept failed; retrying", "transport", TransportTCP, "err", err, "failures", failures, "retry_in", wait)
			}
			select {
			case <-time.After(wait):
			case <-l.closed:
			}
			continue
		}
		if failures > 0 {
			l.log.Info("tunnel: accepting again", "transport", TransportTCP, "after_failures", failures)
			failures = 0
		}
		done, ok := l.gate.enter(raw.RemoteAddr())
		if !ok {
			l.tcpHealth.update(func(h *ListenerHealth) { h.Shed++ })
			_ = raw.Close()
			continue
		}
		go func() {
			defer done()
			l.handshakeTCP(raw, conf)
		}()
	}
}

func (l *Listener) handshakeTCP(raw net.Conn, conf *tls.Config) {
	setKeepAlive(raw, l.cfg.KeepAlive)
	conn := tls.Server(raw, conf)
	ctx, cancel := context.WithTimeout(context.Background(), l.cfg.HandshakeTimeout)
	defer cancel()
	if err := conn.HandshakeContext(ctx); err != nil {
		l.log.Debug("tunnel: handshake failed", "transport", TransportTCP, "remote", raw.RemoteAddr(), "err", err)
		_ = raw.Close()
		return
	}
	cs := conn.ConnectionState()
	if cs.NegotiatedProtocol == wire.JoinALPN {
		l.sc.Join(conn)
		return
	}
	id, err := l.sc.authorize(cs)
	if err == nil {
		_ = conn.SetWriteDeadline(time.Now().Add(l.cfg.HandshakeTimeout))
		err = wire.WriteWelcome(conn, wire.Welcome{Identity: id, ServerVersion: l.sc.ServerVersion})
		_ = conn.SetWriteDeadline(time.Time{})
	}
	if err != nil {
		l.log.Warn("tunnel: dropping connection after handshake", "transport", TransportTCP, "remote", raw.RemoteAddr(), "err", err)
		_ = conn.Close()
		return
	}
	ys, err := yamux.Server(conn, l.cfg.yamux())
	if err != nil {
		_ = conn.Close()
		return
	}
	s := newSession(newTCPTransport(conn, ys, l.cfg), l.cfg)
	s.peer, s.cert = id, cs.PeerCertificates[0]
	l.deliver(s)
}
