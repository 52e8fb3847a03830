package tunnel

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/polecat-sidecar/sidecar/tunnel/internal/guard"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// ServerConfig configures a Listener.
type ServerConfig struct {
	// GetCertificate returns the server's certificate (it may rotate).
	GetCertificate func(*tls.ClientHelloInfo) (*tls.Certificate, error)
	// ClientCAs verifies client certificates.
	ClientCAs *x509.CertPool
	// TrustDomain is the SPIFFE trust domain of client identities;
	// wire.DefaultTrustDomain when empty.
	TrustDomain string
	// Authorize, when set, is asked about every verified client
	// certificate during the handshake; an error refuses it (revocation).
	Authorize func(id wire.Identity, leaf *x509.Certificate) error
	// Join, when set, serves clients that ask for wire.JoinALPN on the TCP port.
	// They have no certificate; Join owns the connection and must close it.
	Join func(conn *tls.Conn)
	// ServerVersion is sent to clients in the welcome.
	ServerVersion string
	// Now is the clock the welcome reports to clients (Session.PeerNow);
	// time.Now when nil. Tests set it to play a server whose clock is not
	// the client's.
	Now func() time.Time
	// Config tunes sessions; zero fields take their defaults.
	Config Config
	// Logger receives refused handshakes; slog.Default() when nil.
	Logger *slog.Logger
	// StatelessResetKey, when set and kept across restarts, lets a
	// restarted server reset its predecessor's QUIC connections as soon as
	// a client sends stream data (quic-go answers only packets over 42
	// bytes, so a tunnel carrying only keepalives still waits for the idle
	// timeout).
	StatelessResetKey *[32]byte
	// DisableQUIC serves TCP only (for tests of the fallback, and for
	// hosts where UDP cannot be served).
	DisableQUIC bool
}

// welcome is what the server tells a client it accepted as id.
func (sc *ServerConfig) welcome(id wire.Identity) wire.Welcome {
	now := time.Now
	if sc.Now != nil {
		now = sc.Now
	}
	return wire.Welcome{Identity: id, ServerVersion: sc.ServerVersion, Time: now()}
}

// Listener accepts tunnels on one port number, QUIC on UDP and TLS+yamux
// on TCP.
type Listener struct {
	sc       ServerConfig
	cfg      Config
	log      *slog.Logger
	tcp      net.Listener
	udp      net.PacketConn
	qtr      *quic.Transport
	sessions chan *Session
	// ctx ends when Close is called.
	ctx  context.Context
	stop context.CancelFunc
	once sync.Once
	// loops are the accept loops and the silence watch, which Close
	// waits for.
	loops sync.WaitGroup

	budgets          *guard.PeerBudgets
	gate             *guard.HandshakeGate
	silence          *guard.SilenceWatch
	tcpHealth, quicH *loopHealth
}

// Listen starts listening on addr ("host:port"; port 0 picks a port free on
// both UDP and TCP).
func Listen(addr string, sc ServerConfig) (*Listener, error) {
	if sc.GetCertificate == nil || sc.ClientCAs == nil {
		return nil, errors.New("tunnel: Listen needs a server certificate and client CAs")
	}
	cfg, err := sc.Config.withDefaults()
	if err != nil {
		return nil, err
	}
	l := &Listener{
		sc:        sc,
		cfg:       cfg,
		log:       sc.Logger,
		sessions:  make(chan *Session),
		gate:      guard.NewHandshakeGate(cfg.MaxHandshakes, cfg.MaxHandshakesPerSource),
		tcpHealth: newLoopHealth(TransportTCP),
	}
	if l.log == nil {
		l.log = slog.Default()
	}
	l.ctx, l.stop = context.WithCancel(context.Background())
	l.budgets = guard.NewPeerBudgets(l.cfg.MaxStreams, l.log)
	l.sc.Config = l.cfg
	if err := l.bind(addr); err != nil {
		return nil, err
	}
	l.loops.Go(func() { l.serveTCP(l.tcp) })
	if l.udp != nil {
		// The server sends no keepalives of its own on QUIC: the client's
		// keep the connection alive, and the idle timeout still notices a
		// silent client. It halves the packets an idle tunnel costs hostd.
		qc := l.cfg.transport().QUIC()
		qc.KeepAlivePeriod = 0
		ql, err := l.qtr.Listen(l.sc.serverTLS(l.log), qc)
		if err != nil {
			l.Close()
			return nil, fmt.Errorf("tunnel: starting QUIC listener: %w", err)
		}
		l.quicH = newLoopHealth(TransportQUIC)
		l.silence = guard.NewSilenceWatch(l.cfg.IdleTimeout)
		l.loops.Go(func() { l.silence.Run(l.ctx) })
		l.loops.Go(func() { l.serveQUIC(ql) })
	}
	return l, nil
}

// bind opens the TCP listener and, unless QUIC is disabled, a UDP socket on
// the same port number. With port 0 it retries until both are free.
func (l *Listener) bind(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("tunnel: listen address %q: %w", addr, err)
	}
	for attempt := 0; ; attempt++ {
		tcp, err := net.Listen("tcp", addr)
		if err != nil {
			return fmt.Errorf("tunnel: listening on tcp %s: %w", addr, err)
		}
		if l.sc.DisableQUIC {
			l.tcp = tcp
			return nil
		}
		bound := net.JoinHostPort(host, strconv.Itoa(tcp.Addr().(*net.TCPAddr).Port))
		udp, err := net.ListenPacket("udp", bound)
		if err != nil {
			_ = tcp.Close()
			if port == "0" && attempt < 10 {
				continue
			}
			return fmt.Errorf("tunnel: listening on udp %s: %w", bound, err)
		}
		l.tcp, l.udp = tcp, udp
		l.qtr = &quic.Transport{Conn: udp}
		if k := l.sc.StatelessResetKey; k != nil {
			key := quic.StatelessResetKey(*k)
			l.qtr.StatelessResetKey = &key
		}
		return nil
	}
}

// Addr is the address listened on; UDP and TCP share its port.
func (l *Listener) Addr() string { return l.tcp.Addr().String() }

// Accept waits for the next established, authenticated session.
func (l *Listener) Accept(ctx context.Context) (*Session, error) {
	select {
	case s := <-l.sessions:
		return s, nil
	case <-l.ctx.Done():
		return nil, net.ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// deliver hands an authenticated session to Accept, holding it to its
// identity's stream budget from now on.
func (l *Listener) deliver(s *Session) {
	s.attach(l.budgets)
	select {
	case l.sessions <- s:
	case <-l.ctx.Done():
		_ = s.CloseWithReason("server shutting down")
	}
}

// Health reports each accept loop: TCP, then QUIC unless disabled.
func (l *Listener) Health() []ListenerHealth {
	t := l.tcpHealth.get()
	t.Handshakes = l.gate.InFlight()
	out := []ListenerHealth{t}
	if l.quicH != nil {
		out = append(out, l.quicH.get())
	}
	return out
}

// StreamsRefused counts the streams refused over a limit, in every session
// this Listener accepted.
func (l *Listener) StreamsRefused() uint64 { return l.budgets.Refused() }

// isClosed reports whether Close was called.
func (l *Listener) isClosed() bool { return l.ctx.Err() != nil }

// loopStopped marks an accept loop down; unless the Listener was closed it
// says so loudly: that transport now refuses every tunnel.
func (l *Listener) loopStopped(h *loopHealth, err error) {
	if l.isClosed() {
		return
	}
	h.update(func(lh *ListenerHealth) {
		lh.Up = false
		lh.LastError, lh.LastErrorAt = err.Error(), time.Now()
	})
	l.log.Error("tunnel: listener stopped; its tunnels are refused until hostd restarts", "transport", h.get().Transport, "err", err)
}

// Close stops listening and waits for the accept loops to return.
// Established sessions are not closed, nor handshakes in progress waited
// for.
func (l *Listener) Close() error {
	var err error
	l.once.Do(func() {
		l.stop()
		err = l.tcp.Close()
		if l.qtr != nil {
			err = errors.Join(err, l.qtr.Close())
		}
		l.loops.Wait()
	})
	return err
}
