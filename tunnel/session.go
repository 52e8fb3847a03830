package tunnel

import (
	"bytes"
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/polecat-sidecar/sidecar/tunnel/internal/connection"
	"github.com/polecat-sidecar/sidecar/tunnel/internal/guard"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// ErrStreamLimit is returned by OpenStream when this side already has
// Config.MaxStreams streams open in the session, and is the reason given
// to a peer that opens more than that.
var ErrStreamLimit = connection.ErrStreamLimit

// ErrSessionClosed is returned for operations on a session that has ended.
var ErrSessionClosed = errors.New("tunnel: session closed")

// transport is what a Session needs from QUIC or TLS+yamux, the two
// implementations in package connection. It is the only place the two
// differ.
type transport interface {
	Open(ctx context.Context) (connection.Stream, error)
	Accept(ctx context.Context) (connection.Stream, error)
	Close(reason string) error
	// PeerClosed ends the session on the peer's goodbye (wire.KindClose).
	PeerClosed(reason string)
	Done() <-chan struct{}
	// AfterDone runs f once the session has ended (at once if it has),
	// without a goroutine of its own.
	AfterDone(f func())
	Err() error
	RTT() time.Duration
	LocalAddr() net.Addr
	RemoteAddr() net.Addr
	Name() string
}

// Session is one established tunnel: a single connection carrying many
// streams. It behaves the same on both transports and is safe for
// concurrent use.
type Session struct {
	t       transport
	cfg     Config
	since   time.Time
	peer    wire.Identity
	cert    *x509.Certificate
	welcome wire.Welcome
	out     atomic.Int32
	in      atomic.Int32
	budget  *guard.PeerBudget // the peer identity's streams, server side
	refused atomic.Uint64
}

// newSession is a session established since: on the server, when its
// connection was accepted.
func newSession(t transport, cfg Config, since time.Time) *Session {
	return &Session{t: t, cfg: cfg, since: since}
}

// newClientSession is a dialled session, with the server's welcome.
func newClientSession(t transport, cfg Config, wel wire.Welcome) *Session {
	s := newSession(t, cfg, time.Now())
	s.welcome = wel
	return s
}

// Peer is the identity of the other side, read from its certificate. It is
// the zero wire.Identity on the client (the server is hostd).
func (s *Session) Peer() wire.Identity { return s.peer }

// PeerCertificate is the certificate the client presented (server side
// only; nil on the client).
func (s *Session) PeerCertificate() *x509.Certificate { return s.cert }

// Welcome is what the server said when the session was established
// (client side only).
func (s *Session) Welcome() wire.Welcome { return s.welcome }

// PeerNow is the server's clock now as the client reckons it: the time
// its welcome carried, plus the time since by this machine's monotonic
// clock, which a step of this machine's wall clock does not move (off
// by the welcome's one-way delay). It is the zero Time when the server
// sent no time (an older hostd), and on the server.
func (s *Session) PeerNow() time.Time {
	if s.welcome.Time.IsZero() {
		return time.Time{}
	}
	return s.welcome.Time.Add(time.Since(s.since))
}

// Transport names the transport in use: TransportQUIC or TransportTCP.
func (s *Session) Transport() string { return s.t.Name() }

// RTT is the latest smoothed round-trip time to the peer.
func (s *Session) RTT() time.Duration { return s.t.RTT() }

// Since is when the session was established: on the client, when its
// welcome arrived; on the server, when the listener accepted its
// connection (TCP: its connect; QUIC: the handshake's end), before the
// welcome, so a tunnel whose welcome took longer is not taken for the
// newer one.
func (s *Session) Since() time.Time { return s.since }

// LocalAddr is this side's network address.
func (s *Session) LocalAddr() net.Addr { return s.t.LocalAddr() }

// RemoteAddr is the peer's network address.
func (s *Session) RemoteAddr() net.Addr { return s.t.RemoteAddr() }

// Streams is how many streams are open now, opened by either side.
func (s *Session) Streams() int { return int(s.out.Load() + s.in.Load()) }

// Done is closed when the session has ended, for whatever reason.
func (s *Session) Done() <-chan struct{} { return s.t.Done() }

// Err says why the session ended; nil while it is up.
func (s *Session) Err() error {
	select {
	case <-s.t.Done():
		if err := s.t.Err(); err != nil {
			return err
		}
		return ErrSessionClosed
	default:
		return nil
	}
}

// Close ends the session and every stream on it.
func (s *Session) Close() error { return s.CloseWithReason("closed") }

// CloseWithReason ends the session, telling the peer why where the
// transport can carry it (QUIC).
func (s *Session) CloseWithReason(reason string) error { return s.t.Close(reason) }

// CloseWhenIdle closes the session with reason once no stream is open on
// it, or when limit has passed, whichever comes first; it returns at once
// and does the waiting in the background. A session that is replaced (a
// newer tunnel of the same polecat, a return to QUIC) is drained this way
// so that its streams finish. Calling keep before then leaves the session
// open after all (the tunnel that replaced it ended first).
func (s *Session) CloseWhenIdle(limit time.Duration, reason string) (keep func()) {
	kept := make(chan struct{})
	go func() {
		deadline := time.NewTimer(limit)
		defer deadline.Stop()
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for s.Streams() > 0 {
			select {
			case <-s.Done():
				return
			case <-kept:
				return
			case <-deadline.C:
				_ = s.CloseWithReason(reason)
				return
			case <-tick.C:
			}
		}
		select {
		case <-kept:
		default:
			_ = s.CloseWithReason(reason)
		}
	}()
	var once sync.Once
	return func() { once.Do(func() { close(kept) }) }
}

// OpenStream opens a stream of the given kind with metadata meta (any value
// that encodes to a JSON object, or nil). The header goes out with the
// first Write, CloseWrite or Read, so a request costs no extra packet; if
// the peer refuses the stream, Read returns a *wire.RemoteError.
func (s *Session) OpenStream(ctx context.Context, kind string, meta any) (*Stream, error) {
	h, err := wire.NewHeader(kind, meta)
	if err != nil {
		return nil, err
	}
	if int(s.out.Add(1)) > s.cfg.MaxStreams {
		s.out.Add(-1)
		return nil, fmt.Errorf("opening %s stream: %w (%d open)", kind, ErrStreamLimit, s.cfg.MaxStreams)
	}
	raw, err := s.t.Open(ctx)
	if err != nil {
		s.out.Add(-1)
		if e := s.Err(); e != nil {
			return nil, fmt.Errorf("tunnel: opening %s stream: session ended: %w", kind, e)
		}
		return nil, fmt.Errorf("tunnel: opening %s stream: %w", kind, err)
	}
	return &Stream{raw: raw, sess: s, hdr: h, opener: true, release: func() { s.out.Add(-1) }}, nil
}

// AcceptStream waits for the peer to open a stream and reads its header,
// for as long as ctx lets it (a stream's opener sends its header with its
// first write, which may come much later: Serve does not wait on one
// stream's header before accepting the next).
// A stream over the limits, or whose header is malformed, is refused (the
// peer sees why) and AcceptStream returns the error; callers may log it
// and go on.
func (s *Session) AcceptStream(ctx context.Context) (*Stream, error) {
	raw, err := s.acceptRaw(ctx)
	if err != nil {
		return nil, err
	}
	release, err := s.admitOrRefuse(raw)
	if err != nil {
		return nil, err
	}
	return s.readHeader(ctx, raw, release)
}

func (s *Session) acceptRaw(ctx context.Context) (connection.Stream, error) {
	raw, err := s.t.Accept(ctx)
	if err != nil {
		if e := s.Err(); e != nil {
			return nil, e
		}
		return nil, fmt.Errorf("tunnel: accepting stream: %w", err)
	}
	return raw, nil
}

// admitOrRefuse counts an accepted stream against the limits before
// anything of it is read. Over a limit it is refused without reading its
// header: the reason goes out as the verdict and whatever the peer sent is
// discarded as it arrives, the stream counting until then; a peer far past
// a limit loses the session.
func (s *Session) admitOrRefuse(raw connection.Stream) (func(), error) {
	release, abusive, err := s.admit()
	if err == nil {
		return release, nil
	}
	s.refused.Add(1)
	if s.budget != nil {
		s.budget.RefusedStream(s.peer, err, abusive)
	}
	err = fmt.Errorf("refused stream from %s: %w", s.peerName(), err)
	if abusive {
		release()
		_ = s.CloseWithReason("stream limit exceeded far past the limit; closing the tunnel")
		return nil, err
	}
	go func() {
		defer release()
		_ = raw.SetWriteDeadline(time.Now().Add(s.cfg.HandshakeTimeout))
		_ = wire.WriteVerdict(raw, ErrStreamLimit.Error())
		_ = raw.CloseWrite()
		raw.Discard(s.cfg.HandshakeTimeout)
		_ = raw.Close()
	}()
	return nil, err
}

// Refused is how many streams the peer opened over a limit.
func (s *Session) Refused() uint64 { return s.refused.Load() }

// readHeader reads the header of an admitted stream. Its first byte is
// waited for as long as the session lasts, as the opener sends the header
// with its first write (docs/protocol.md, Streams); the rest must follow
// within the handshake timeout, or the stream is refused saying so. A
// stream still silent when ctx ends is closed.
func (s *Session) readHeader(ctx context.Context, raw connection.Stream, release func()) (*Stream, error) {
	st := &Stream{raw: raw, sess: s, release: release}
	stop := context.AfterFunc(ctx, func() { _ = raw.SetReadDeadline(time.Now()) })
	var first [1]byte
	_, err := io.ReadFull(raw, first[:])
	if !stop() {
		release()
		_ = raw.Close()
		return nil, fmt.Errorf("tunnel: waiting for a stream header from %s: %w", s.peerName(), context.Cause(ctx))
	}
	var h wire.Header
	if err == nil {
		_ = raw.SetReadDeadline(time.Now().Add(s.cfg.HandshakeTimeout))
		h, err = wire.ReadHeader(io.MultiReader(bytes.NewReader(first[:]), raw))
		_ = raw.SetReadDeadline(time.Time{})
	}
	if err != nil {
		var he *wire.HeaderError
		var ne net.Error
		switch {
		case errors.As(err, &he):
			_ = st.Reject(he.Error())
		case errors.As(err, &ne) && ne.Timeout():
			_ = st.Reject(fmt.Sprintf("stream header incomplete %v after its first byte", s.cfg.HandshakeTimeout))
		default: // the stream or the session ended before a header
			release()
			_ = raw.Close()
		}
		return nil, fmt.Errorf("tunnel: reading stream header from %s: %w", s.peerName(), err)
	}
	st.hdr = h
	if h.Kind == wire.KindClose {
		var bye wire.Goodbye
		_ = st.DecodeMeta(&bye)
		_ = st.Close()
		s.t.PeerClosed(wire.TruncateReason(bye.Reason))
		return nil, s.Err()
	}
	return st, nil
}

func (s *Session) peerName() string {
	if s.peer.IsZero() {
		return s.RemoteAddr().String()
	}
	return s.peer.String()
}

// Serve accepts streams until the session ends, giving each to h in its
// own goroutine and closing it when h returns. It returns why the session
// ended, or ctx's error, once every h it started has returned.
func (s *Session) Serve(ctx context.Context, h Handler) error {
	var handlers sync.WaitGroup
	defer handlers.Wait()
	for {
		raw, err := s.acceptRaw(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return err
		}
		release, err := s.admitOrRefuse(raw)
		if err != nil {
			continue
		}
		handlers.Go(func() {
			st, err := s.readHeader(ctx, raw, release)
			if err != nil {
				return
			}
			defer st.Close()
			h.ServeStream(ctx, st)
		})
	}
}
