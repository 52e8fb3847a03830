package tunnel

import (
	"context"
	"crypto/tls"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/polecat-sidecar/sidecar/tunnel/internal/connection"
)

// dialQUIC establishes a QUIC session (see connection.DialQUIC).
func dialQUIC(ctx context.Context, addr string, tlsConf *tls.Config, cfg Config) (*Session, error) {
	t, wel, err := connection.DialQUIC(ctx, addr, tlsConf, cfg.transport())
	if err != nil {
		return nil, err
	}
	return newClientSession(t, cfg, wel), nil
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
		at := time.Now()
		go func() {
			cs := conn.ConnectionState().TLS
			id, err := l.sc.authorize(cs) // already checked in VerifyConnection
			if err != nil {
				_ = conn.CloseWithError(1, "unauthorized")
				return
			}
			t, err := connection.WelcomeQUIC(conn, l.sc.welcome(id))
			if err != nil {
				l.log.Warn("tunnel: sending welcome failed", "transport", TransportQUIC, "remote", conn.RemoteAddr(), "err", err)
				return
			}
			l.silence.Add(t)
			s := newSession(t, l.cfg, at)
			s.peer, s.cert = id, cs.PeerCertificates[0]
			l.deliver(s)
		}()
	}
}
