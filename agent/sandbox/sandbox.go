// Package sandbox is gt-agent's half of the sandbox channel (hostd's is
// hostd/sandbox, which hostd run drives): in the container 'hostd run'
// keeps for a polecat, it clones the rig through the agent's own git port
// and brings the clone to the polecat's branch (prepare), and starts,
// waits for and ends the polecat's sessions in the watched tmux session
// (agent/liveness's StartSession, WaitSession, StopSession). Each
// operation is one stream hostd opens; nothing runs through docker exec.
package sandbox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/polecat-sidecar/sidecar/agent/liveness"
	"github.com/polecat-sidecar/sidecar/agent/tmux"
	"github.com/polecat-sidecar/sidecar/internal/settings"
	"github.com/polecat-sidecar/sidecar/tunnel"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// Config configures the sandbox channel.
type Config struct {
	// WorkDir holds the polecat's clone of its rig, <WorkDir>/<rig>
	// (gt-agent up's --work-dir; made absolute).
	WorkDir string
	// DataRoot is the data channel's root, whose .claude/settings.json
	// is the rig's Claude settings in the container (default WorkDir).
	DataRoot string
	// GitAddr is the agent's git port, host:port: the clone's origin is
	// http://<GitAddr>/v1/git/<rig>. Empty: no clone can be made.
	GitAddr string
	// Session is the tmux session the polecat's sessions run in.
	Session string
	// Tmux is the tmux server.
	Tmux tmux.Server
	// Poll is how often a running session is looked at for its end.
	Poll time.Duration
	// Logger receives a line per operation.
	Logger *slog.Logger
}

// DefaultConfig works in the current directory, runs sessions in the
// "polecat" tmux session and looks for their end every 100 ms.
func DefaultConfig() Config {
	return Config{
		WorkDir: ".",
		Session: "polecat",
		Poll:    100 * time.Millisecond, // above 0
		Logger:  slog.Default(),
	}
}

// Validate names each field out of its range; New calls it once zero
// fields have their defaults.
func (c Config) Validate() error {
	return errors.Join(settings.Positive("Poll", c.Poll), settings.Required("Session", c.Session))
}

// Service serves sandbox streams; safe for concurrent use.
type Service struct {
	cfg Config
	// mu keeps prepares and session starts one at a time: git in one
	// clone, and tmux's replacement of one session.
	mu sync.Mutex
}

// New returns the service; zero Config fields take DefaultConfig's.
func New(cfg Config) (*Service, error) {
	settings.FillZero(&cfg, DefaultConfig())
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	var err error
	if cfg.WorkDir, err = filepath.Abs(cfg.WorkDir); err != nil {
		return nil, fmt.Errorf("sandbox: the work directory: %w", err)
	}
	if cfg.DataRoot == "" {
		cfg.DataRoot = cfg.WorkDir
	}
	if cfg.DataRoot, err = filepath.Abs(cfg.DataRoot); err != nil {
		return nil, fmt.Errorf("sandbox: the data root: %w", err)
	}
	return &Service{cfg: cfg}, nil
}

// ServeStream serves one operation. hostd closing its side, or the
// stream breaking, ends what waits for it (a clone, a session's end),
// never the session: a reconnected tunnel's next stream waits for it.
func (s *Service) ServeStream(ctx context.Context, st *tunnel.Stream) {
	req, err := wire.ReadSandboxRequest(st)
	rig := st.Session().Welcome().Identity.Rig
	if err == nil && rig == "" {
		err = errors.New("sandbox: hostd's welcome named no rig")
	}
	if err != nil {
		_ = st.Reject(err.Error())
		return
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	heard := make(chan struct{})
	go func() {
		defer close(heard)
		buf := make([]byte, 512)
		for {
			if _, err := st.Read(buf); err != nil {
				cancel()
				return
			}
		}
	}()
	defer func() { <-heard }()
	defer st.SetReadDeadline(time.Now()) // ends that read once answered
	answer := func(a wire.SandboxAnswer) { _ = wire.WriteSandboxAnswer(st, a) }
	switch req.Op {
	case wire.SandboxPrepare:
		s.mu.Lock()
		c, err := s.prepare(ctx, rig, req)
		s.mu.Unlock()
		if err != nil {
			answer(failed(err))
		} else {
			answer(wire.SandboxAnswer{Status: wire.SandboxPrepared, Clone: &c})
		}
	case wire.SandboxSession:
		if err := s.start(ctx, rig, req); err != nil {
			answer(failed(err))
			break
		}
		answer(wire.SandboxAnswer{Status: wire.SandboxStarted})
		s.wait(ctx, req.Tag, answer)
	case wire.SandboxWait:
		s.wait(ctx, req.Tag, answer)
	case wire.SandboxStop:
		stopped, err := liveness.StopSession(ctx, s.cfg.Tmux, s.cfg.Session, req.Tag)
		switch {
		case err != nil:
			answer(failed(err))
		case stopped:
			s.cfg.Logger.Info("sandbox: session stopped", "tag", req.Tag)
			answer(wire.SandboxAnswer{Status: wire.SandboxStopped})
		default:
			answer(wire.SandboxAnswer{Status: wire.SandboxGone})
		}
	}
	_ = st.CloseWrite()
}

// failed is the answer saying err.
func failed(err error) wire.SandboxAnswer {
	return wire.SandboxAnswer{Status: wire.SandboxFailed, Error: err.Error()}
}

// start starts req's session in rig's clone, with its command as the
// container runs it; a session already tagged req.Tag is left running.
func (s *Service) start(ctx context.Context, rig string, req wire.SandboxRequest) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	spec := liveness.SessionSpec{Name: s.cfg.Session, Command: s.command(req.Command), Dir: s.clone(rig), Env: req.Env, Tag: req.Tag}
	if _, err := os.Stat(spec.Dir); err != nil {
		return fmt.Errorf("the session's directory, the rig's clone (prepare makes it): %w", err)
	}
	if err := liveness.StartSession(ctx, s.cfg.Tmux, spec); err != nil {
		return fmt.Errorf("starting the session: %w", err)
	}
	s.cfg.Logger.Info("sandbox: session started", "tag", req.Tag, "command", spec.Command[0])
	return nil
}

// wait answers how the session tagged tag ends; nothing when ctx ends
// first (hostd is gone, the session runs on).
func (s *Service) wait(ctx context.Context, tag string, answer func(wire.SandboxAnswer)) {
	code, err := liveness.WaitSession(ctx, s.cfg.Tmux, s.cfg.Session, tag, s.cfg.Poll)
	switch {
	case ctx.Err() != nil:
	case errors.Is(err, liveness.ErrSessionGone):
		answer(wire.SandboxAnswer{Status: wire.SandboxGone})
	case errors.Is(err, liveness.ErrSessionReplaced):
		answer(wire.SandboxAnswer{Status: wire.SandboxReplaced})
	case err != nil:
		answer(failed(fmt.Errorf("waiting for the session: %w", err)))
	default:
		answer(wire.SandboxAnswer{Status: wire.SandboxExited, Code: min(max(code, 0), 255)})
	}
}

// clone is where rig's clone is.
func (s *Service) clone(rig string) string { return filepath.Join(s.cfg.WorkDir, rig) }
