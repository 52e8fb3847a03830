package tunnel

import (
	"context"
	"crypto/tls"
	"net"
	"time"

	"github.com/polecat-sidecar/sidecar/internal/accept"
	"github.com/polecat-sidecar/sidecar/tunnel/internal/connection"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// dialTCP establishes a TLS+yamux session (see connection.DialTCP).
func dialTCP(ctx context.Context, addr string, tlsConf *tls.Config, cfg Config) (*Session, error) {
	t, wel, err := connection.DialTCP(ctx, addr, tlsConf, cfg.transport())
	if err != nil {
		return nil, err
	}
	return newClientSession(t, cfg, wel), nil
}

// serveTCP accepts TCP connections until ln closes. Each handshake runs in
// its own goroutine, bounded by the handshake timeout and by the handshake
// gate, so a slow or hostile client cannot hold up others. A failed accept
// (out of file descriptors) is retried after a backoff, never fatal.
func (l *Listener) serveTCP(ln net.Listener) {
	conf := l.sc.tcpTLS(l.log)
	loop := accept.Loop{
		Name:   "tunnel",
		Logger: l.log.With("transport", TransportTCP),
		Failed: func(err error) {
			l.tcpHealth.update(func(h *ListenerHealth) {
				h.AcceptErrors++
				h.LastError, h.LastErrorAt = err.Error(), time.Now()
			})
		},
	}
	err := loop.Serve(l.ctx, ln, func(raw net.Conn) {
		done, ok := l.gate.Enter(raw.RemoteAddr())
		if !ok {
			l.tcpHealth.update(func(h *ListenerHealth) { h.Shed++ })
			_ = raw.Close()
			return
		}
		at := time.Now()
		go func() {
			defer done()
			l.handshakeTCP(raw, conf, at)
		}()
	})
	if err != nil {
		l.loopStopped(l.tcpHealth, err)
	}
}

// handshakeTCP completes a connection accepted at: a join, handed to
// ServerConfig.Join, or a tunnel, welcomed and delivered.
func (l *Listener) handshakeTCP(raw net.Conn, conf *tls.Config, at time.Time) {
	conn, err := connection.HandshakeTCP(raw, conf, l.cfg.transport())
	if err != nil {
		l.log.Debug("tunnel: handshake failed", "transport", TransportTCP, "remote", raw.RemoteAddr(), "err", err)
		return
	}
	cs := conn.ConnectionState()
	if cs.NegotiatedProtocol == wire.JoinALPN {
		l.sc.Join(conn)
		return
	}
	id, err := l.sc.authorize(cs)
	var t *connection.TCP
	if err == nil {
		t, err = connection.WelcomeTCP(conn, l.sc.welcome(id), l.cfg.transport())
	} else {
		_ = conn.Close()
	}
	if err != nil {
		l.log.Warn("tunnel: dropping connection after handshake", "transport", TransportTCP, "remote", raw.RemoteAddr(), "err", err)
		return
	}
	s := newSession(t, l.cfg, at)
	s.peer, s.cert = id, cs.PeerCertificates[0]
	l.deliver(s)
}
