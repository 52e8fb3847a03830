// Package relay is gt-agent's side of the gt/bd relay: the shim that runs
// when the binary is invoked as gt or bd, and the forwarder in 'gt-agent
// up' that turns each shim connection on the local unix socket into one
// relay stream on the tunnel, copied verbatim.
package relay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/polecat-sidecar/sidecar/tunnel"
)

// DefaultSocket is where the agent listens for shims unless GT_AGENT_SOCKET
// or --socket says otherwise.
const DefaultSocket = "/run/gt-agent/agent.sock"

// SocketEnv names the environment variable that overrides DefaultSocket,
// for the agent and the shim alike.
const SocketEnv = "GT_AGENT_SOCKET"

// Sessions gives the current tunnel session, waiting until ctx ends.
type Sessions interface {
	Session(ctx context.Context) (*tunnel.Session, error)
}

// Forwarder serves shims on a unix socket.
type Forwarder struct {
	// Path is the socket path; its directory is made 0700 and the socket
	// 0600, so only the agent's user can relay.
	Path string
	// Wait is how long a shim waits for a tunnel that is down (default
	// 10s).
	Wait time.Duration
	// Sessions supplies the tunnel.
	Sessions Sessions
	// Logger receives forwarding failures.
	Logger *slog.Logger
}

// Listen opens the socket, replacing a stale one.
func (f *Forwarder) Listen() (net.Listener, error) {
	if err := os.MkdirAll(filepath.Dir(f.Path), 0o700); err != nil {
		return nil, fmt.Errorf("creating relay socket directory: %w", err)
	}
	if c, err := net.DialTimeout("unix", f.Path, time.Second); err == nil {
		c.Close()
		return nil, fmt.Errorf("another gt-agent already serves %s", f.Path)
	}
	_ = os.Remove(f.Path)
	ln, err := net.Listen("unix", f.Path)
	if err != nil {
		return nil, fmt.Errorf("listening for gt/bd shims on %s: %w", f.Path, err)
	}
	if err := os.Chmod(f.Path, 0o600); err != nil {
		ln.Close()
		return nil, err
	}
	return ln, nil
}

// Serve forwards each connection on ln until ctx ends.
func (f *Forwarder) Serve(ctx context.Context, ln net.Listener) error {
	if f.Wait <= 0 {
		f.Wait = 10 * time.Second
	}
	go func() { <-ctx.Done(); ln.Close() }()
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if errors.Is(err, net.ErrClosed) {
				return err
			}
			continue
		}
		go f.forward(ctx, c)
	}
}

// forward opens a relay stream for c and copies both ways until either
// side ends. A shim that goes away ends the stream, which makes hostd kill
// the command.
func (f *Forwarder) forward(ctx context.Context, c net.Conn) {
	defer c.Close()
	wctx, cancel := context.WithTimeout(ctx, f.Wait)
	sess, err := f.Sessions.Session(wctx)
	cancel()
	if err != nil {
		_ = tunnel.WriteFrame(c, tunnel.FrameError, fmt.Appendf(nil, "the tunnel to hostd is down and did not come back within %v (gt-agent keeps retrying; see its log)", f.Wait))
		return
	}
	st, err := sess.OpenStream(ctx, tunnel.KindRelay, nil)
	if err != nil {
		f.Logger.Warn("relay: opening stream failed", "err", err)
		_ = tunnel.WriteFrame(c, tunnel.FrameError, []byte("could not open a relay stream to hostd: "+err.Error()))
		return
	}
	defer st.Close()
	if err := tunnel.WriteFrame(c, tunnel.FrameAttached, nil); err != nil {
		return
	}
	// The shim has already sent its request. Forward it before anything
	// reads the stream, so that the stream header and the request leave in
	// one packet (a read would flush the header on its own).
	buf := make([]byte, tunnel.RelayChunk)
	_ = c.SetReadDeadline(time.Now().Add(f.Wait))
	n, err := c.Read(buf)
	_ = c.SetReadDeadline(time.Time{})
	if err != nil {
		return
	}
	if _, err := st.Write(buf[:n]); err != nil {
		return
	}
	go func() {
		_, _ = io.Copy(st, c)
		_ = st.CloseWrite()
	}()
	_, _ = io.Copy(c, st)
}
