// Package forward turns local connections inside the container (the gt/bd
// shims' unix socket, git's loopback TCP port) into tunnel streams, one
// stream per connection, copied verbatim both ways. agent/relay and
// agent/git configure it for their channels.
package forward

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/polecat-sidecar/sidecar/internal/accept"
	"github.com/polecat-sidecar/sidecar/tunnel"
)

// DefaultWait is how long a local client waits for a tunnel that is down
// before it is told so.
const DefaultWait = 10 * time.Second

// Forwarder forwards each accepted connection as one stream of Kind.
type Forwarder struct {
	// Kind is the stream kind to open.
	Kind string
	// Wait is how long a connection waits for a tunnel that is down
	// (DefaultWait when zero).
	Wait time.Duration
	// Sessions supplies the tunnel.
	Sessions tunnel.Sessions
	// Attached, when set, tells the local client that its stream is open.
	Attached func(c net.Conn) error
	// Unavailable tells the local client, in its own protocol, that no
	// stream could be had and why.
	Unavailable func(c net.Conn, reason string)
	// Gone, when set, tells the host, in the channel's protocol, that the
	// local client's connection ended (before the stream is half-closed).
	Gone func(st io.Writer)
	// Admit, when set, is asked about each local connection first; an
	// error closes it unserved, and is logged.
	Admit func(c net.Conn) error
	// Logger receives forwarding failures.
	Logger *slog.Logger
}

// Serve forwards each connection on ln until ctx ends, which also ends
// the connections; it returns once every one it took has ended. It
// returns nil once ctx has ended, else the error that ended the accept
// loop (net.ErrClosed: ln closed by someone else).
func (f *Forwarder) Serve(ctx context.Context, ln net.Listener) error {
	if f.Wait <= 0 {
		f.Wait = DefaultWait
	}
	if f.Logger == nil {
		f.Logger = slog.Default()
	}
	context.AfterFunc(ctx, func() { ln.Close() })
	var conns sync.WaitGroup
	defer conns.Wait()
	loop := accept.Loop{Name: "forward", Logger: f.Logger.With("kind", f.Kind)}
	return loop.Serve(ctx, ln, func(c net.Conn) { conns.Go(func() { f.forward(ctx, c) }) })
}

// forward opens a stream for c and copies both ways until either side
// ends, or ctx does. A local client that goes away ends the stream, and
// the host side stops what it was doing for it.
func (f *Forwarder) forward(ctx context.Context, c net.Conn) {
	defer c.Close()
	defer context.AfterFunc(ctx, func() { c.Close() })()
	f.trace(ctx, "accepted")
	if f.Admit != nil {
		if err := f.Admit(c); err != nil {
			f.Logger.Warn("refused local connection", "kind", f.Kind, "err", err)
			return
		}
	}
	wctx, cancel := context.WithTimeout(ctx, f.Wait)
	sess, err := f.Sessions.Session(wctx)
	cancel()
	if err != nil {
		f.Unavailable(c, fmt.Sprintf("the tunnel to hostd is down and did not come back within %v (gt-agent keeps retrying; see its log)", f.Wait))
		return
	}
	st, err := sess.OpenStream(ctx, f.Kind, nil)
	if err != nil {
		f.Logger.Warn("opening stream failed", "kind", f.Kind, "err", err)
		f.Unavailable(c, "could not open a stream to hostd: "+err.Error())
		return
	}
	defer st.Close()
	defer context.AfterFunc(ctx, func() { st.Close() })()
	f.trace(ctx, "opened")
	if f.Attached != nil {
		if err := f.Attached(c); err != nil {
			return
		}
	}
	// The client speaks first. Forward its first bytes before anything
	// reads the stream, so the stream header and the request leave in one
	// packet (a read would flush the header on its own).
	buf := make([]byte, 32<<10)
	_ = c.SetReadDeadline(time.Now().Add(f.Wait))
	n, err := c.Read(buf)
	_ = c.SetReadDeadline(time.Time{})
	if err != nil {
		return
	}
	f.trace(ctx, "read")
	if _, err := st.Write(buf[:n]); err != nil {
		return
	}
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		_, _ = io.CopyBuffer(st, c, buf)
		if f.Gone != nil {
			f.Gone(st)
		}
		_ = st.CloseWrite()
	}()
	_, _ = io.Copy(c, st)
	f.trace(ctx, "done")
	st.Close() // and c: the copy to the host ends, if the client's has not
	c.Close()
	<-sent
}

// trace logs, at debug level, that a forwarded connection reached step:
// accepted, its stream opened, the client's first bytes read (about to be
// sent on it), and everything the host sent delivered (the stream's end). With hostd's
// relay trace it is the timeline BenchmarkRelayTrace reads.
func (f *Forwarder) trace(ctx context.Context, step string) {
	if f.Logger.Enabled(ctx, slog.LevelDebug) {
		f.Logger.Debug("forward trace", "kind", f.Kind, "step", step)
	}
}
