// Package pane is gt-agent's half of the pane channel (hostd peek and
// hostd attach): it captures the polecat's tmux pane as text, follows
// what is added to it, and has agent/tmux attach a client to the session
// on a terminal of its own, whose output it streams to hostd and whose
// keys and size hostd sends.
package pane

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/polecat-sidecar/sidecar/agent/tmux"
	"github.com/polecat-sidecar/sidecar/internal/settings"
	"github.com/polecat-sidecar/sidecar/tunnel"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// Config configures the pane channel.
type Config struct {
	// Session is the tmux session shown.
	Session string
	// Tmux is the tmux server.
	Tmux tmux.Server
	// Follow is how often peek --follow looks at the pane.
	Follow time.Duration
	// Logger receives a line per attach.
	Logger *slog.Logger
}

// DefaultConfig shows the "polecat" session and follows every 500 ms.
func DefaultConfig() Config {
	return Config{
		Session: "polecat",
		Follow:  500 * time.Millisecond, // above 0
		Logger:  slog.Default(),
	}
}

// Validate names each field out of its range; New calls it once zero
// fields have their defaults.
func (c Config) Validate() error {
	return settings.Positive("Follow", c.Follow)
}

// Service serves pane streams.
type Service struct{ cfg Config }

// New returns the service; zero Config fields take DefaultConfig's.
func New(cfg Config) (*Service, error) {
	settings.FillZero(&cfg, DefaultConfig())
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("pane: %w", err)
	}
	return &Service{cfg: cfg}, nil
}

// ServeStream serves one peek or attach.
func (s *Service) ServeStream(ctx context.Context, st *tunnel.Stream) {
	req, ok := tunnel.DecodeRequest(st, wire.PaneRequest.Validate)
	if !ok {
		return
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if req.Op == wire.PanePeek {
		// hostd closing its side ends a follow.
		heard := make(chan struct{})
		go func() {
			defer close(heard)
			_, _ = st.Read(make([]byte, 1))
			cancel()
		}()
		defer func() { <-heard }()
		defer st.SetReadDeadline(time.Now()) // ends that read once answered
		if err := s.peek(ctx, st, req); err != nil {
			_ = st.Reject(err.Error())
			return
		}
		_ = st.CloseWrite()
		return
	}
	if err := s.attach(ctx, st, req); err != nil {
		_ = st.Reject(err.Error())
	}
}

// peek writes the pane's last lines, then with Follow what is added.
func (s *Service) peek(ctx context.Context, st *tunnel.Stream, req wire.PaneRequest) error {
	prev, err := s.lines(ctx, req.Lines)
	if err != nil {
		return err
	}
	if _, err := st.Write([]byte(strings.Join(prev, "\n") + "\n")); err != nil || !req.Follow {
		return nil
	}
	t := time.NewTicker(s.cfg.Follow)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		cur, err := s.lines(ctx, req.Lines)
		if err != nil {
			return nil // the session is gone: the follow ends
		}
		if added := appended(prev, cur); len(added) > 0 {
			if _, err := st.Write([]byte(strings.Join(added, "\n") + "\n")); err != nil {
				return nil
			}
		}
		prev = cur
	}
}

// lines is the pane's last n lines, trailing empty ones dropped.
func (s *Service) lines(ctx context.Context, n int) ([]string, error) {
	text, err := s.cfg.Tmux.History(ctx, s.cfg.Session, n)
	if err != nil {
		return nil, err
	}
	l := strings.Split(strings.TrimRight(text, "\n "), "\n")
	for i := range l {
		l[i] = strings.TrimRight(l[i], " ")
	}
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return l, nil
}

// appended is what cur adds to prev: the lines after the longest end of
// prev that cur starts with (output scrolled up), or the lines that
// differ from the end when the screen was redrawn in place.
func appended(prev, cur []string) []string {
	for k := min(len(prev), len(cur)); k > 0; k-- {
		if equal(prev[len(prev)-k:], cur[:k]) {
			return cur[k:]
		}
	}
	// Redrawn in place: the lines from the first that changed.
	for i := range cur {
		if i >= len(prev) || prev[i] != cur[i] {
			return cur[i:]
		}
	}
	return nil
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// attach runs tmux attach on the session in a new terminal, copying its
// output to st and st's frames to it, until either side ends.
func (s *Service) attach(ctx context.Context, st *tunnel.Stream, req wire.PaneRequest) error {
	// tmux attach-session starts a server when there is none: one started
	// while a sandbox is between sessions would race the next session's
	// server for the socket. So no session, no attach.
	if _, found, err := s.cfg.Tmux.ReadPane(ctx, s.cfg.Session); err != nil {
		return err
	} else if !found {
		return fmt.Errorf("no tmux session %q (yet)", s.cfg.Session)
	}
	cmd, master, err := s.cfg.Tmux.Attach(s.cfg.Session, req.Write, req.Cols, req.Rows)
	if err != nil {
		return err
	}
	var output sync.WaitGroup
	defer output.Wait() // once master is closed
	defer master.Close()
	s.cfg.Logger.Info("pane: operator attached", "session", s.cfg.Session, "write", req.Write)
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
		_ = st.CloseWrite()
	}()
	// Output: the tmux client's terminal, as it comes.
	output.Go(func() {
		buf := make([]byte, 32<<10)
		for {
			n, err := master.Read(buf)
			if n > 0 {
				if _, werr := st.Write(buf[:n]); werr != nil {
					break
				}
			}
			if err != nil {
				break
			}
		}
	})
	// Input: hostd's frames, until hostd detaches.
	buf := make([]byte, wire.MaxPaneFrame)
	for {
		typ, payload, cols, rows, err := wire.ReadPaneFrame(st, buf)
		if err != nil {
			break
		}
		switch typ {
		case wire.PaneInput:
			_, _ = master.Write(payload)
		case wire.PaneResize:
			_ = tmux.SetSize(master, cols, rows)
		}
	}
	_ = cmd.Process.Signal(syscall.SIGHUP)
	select {
	case <-exited:
	case <-time.After(2 * time.Second):
		_ = cmd.Process.Kill()
		<-exited
	case <-ctx.Done():
		_ = cmd.Process.Kill()
		<-exited
	}
	s.cfg.Logger.Info("pane: operator detached", "session", s.cfg.Session)
	return nil
}
