// Package pane is hostd's half of the pane channel (the agent's is
// agent/pane): hostd peek and hostd attach open a pane stream on the
// polecat's current tunnel and copy it to the operator's command. What
// comes back is the polecat's; the CLI makes it safe for the operator's
// terminal (peek escapes it, attach filters it).
package pane

import (
	"context"
	"fmt"
	"io"

	"github.com/polecat-sidecar/sidecar/hostd/registry"
	"github.com/polecat-sidecar/sidecar/tunnel"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// MaxPeek bounds what one peek (not following) relays.
const MaxPeek = 16 << 20

// Service is safe for concurrent use.
type Service struct{ reg *registry.Registry }

// New returns the service.
func New(reg *registry.Registry) *Service { return &Service{reg: reg} }

// open opens a pane stream to the polecat.
func (s *Service) open(ctx context.Context, id wire.Identity, req wire.PaneRequest) (*tunnel.Stream, error) {
	if err := req.Validate(); err != nil {
		return nil, err
	}
	c, ok := s.reg.Current(id)
	if !ok {
		return nil, fmt.Errorf("%s is not connected", id)
	}
	st, err := c.Session().OpenStream(ctx, wire.KindPane, req)
	if err != nil {
		return nil, fmt.Errorf("opening %s's pane: %w", id, err)
	}
	return st, nil
}

// Peek copies the pane's last lines (and, following, what is added) to w
// until the agent ends, ctx ends or w fails.
func (s *Service) Peek(ctx context.Context, id wire.Identity, lines int, follow bool, w io.Writer) error {
	st, err := s.open(ctx, id, wire.PaneRequest{Op: wire.PanePeek, Lines: lines, Follow: follow})
	if err != nil {
		return err
	}
	defer st.Close()
	stop := context.AfterFunc(ctx, func() { st.Close() })
	defer stop()
	var r io.Reader = st
	if !follow {
		r = io.LimitReader(st, MaxPeek)
	}
	if _, err := io.Copy(w, r); err != nil && ctx.Err() == nil {
		return fmt.Errorf("peeking at %s: %w", id, err)
	}
	return nil
}

// Attach connects an operator's terminal to a tmux client on the
// polecat's session. Once the agent has answered with the terminal's
// first output, upgrade gives the operator's connection: its attach
// frames go to the agent and the terminal's output comes back, until
// either side ends. Read-only (req.Write off) is enforced here, not left
// to the agent: only resize frames are forwarded, never a key. A refusal
// comes back as the error, before upgrade is called.
func (s *Service) Attach(ctx context.Context, id wire.Identity, req wire.PaneRequest, upgrade func() (io.ReadWriteCloser, error)) error {
	req.Op = wire.PaneAttach
	st, err := s.open(ctx, id, req)
	if err != nil {
		return err
	}
	defer st.Close()
	first := make([]byte, 32<<10)
	n, err := st.Read(first) // with the end of a short session, perhaps
	if n == 0 && err != nil {
		return fmt.Errorf("attaching to %s: %w", id, err)
	}
	conn, err := upgrade()
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.Write(first[:n]); err != nil {
		return nil
	}
	done := make(chan struct{}, 2)
	go func() {
		_ = relayFrames(st, conn, req.Write) // the operator's frames
		_ = st.CloseWrite()
		done <- struct{}{}
	}()
	go func() {
		_, _ = io.Copy(conn, st) // the terminal
		done <- struct{}{}
	}()
	select {
	case <-done:
	case <-ctx.Done():
	}
	return nil
}

// relayFrames copies the operator's attach frames from src to the agent
// at dst until src ends or a frame is malformed: resizes always, input
// only when write is on.
func relayFrames(dst io.Writer, src io.Reader, write bool) error {
	buf := make([]byte, wire.MaxPaneFrame)
	for {
		typ, payload, cols, rows, err := wire.ReadPaneFrame(src, buf)
		if err != nil {
			return err
		}
		switch {
		case typ == wire.PaneResize:
			err = wire.WritePaneFrame(dst, typ, wire.ResizePayload(cols, rows))
		case write:
			err = wire.WritePaneFrame(dst, typ, payload)
		}
		if err != nil {
			return fmt.Errorf("forwarding an attach frame: %w", err)
		}
	}
}
