package relay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/polecat-sidecar/sidecar/tunnel"
)

// Config configures the relay service.
type Config struct {
	// Town is the Gas Town root: relayed commands run there.
	Town string
	// Binaries maps a command to its binary. A missing or relative entry is
	// looked up in hostd's PATH when the service starts; the absolute path
	// found then is what runs.
	Binaries map[string]string
	// Policy is the allowlist; DefaultAllow and DefaultEnvAllow where
	// empty.
	Policy Policy
	// Env is the base environment of relayed commands (hostd's own is not
	// passed on). Default: PATH (the binaries' directories and the system
	// ones) and HOME.
	Env []string
	// MaxConcurrent bounds the commands one polecat runs at once
	// (default 8).
	MaxConcurrent int
	// QueueWait is how long a command over the limit waits for a slot
	// before it is refused (default 10s).
	QueueWait time.Duration
	// Timeout, when set, kills commands that run longer.
	Timeout time.Duration
	// Logger receives one line per relayed command.
	Logger *slog.Logger
}

// Service serves relay streams.
type Service struct {
	cfg  Config
	bins map[string]string
	log  *slog.Logger

	mu    sync.Mutex
	slots map[tunnel.Identity]chan struct{}
}

// allowedSignals are the signals a shim may forward.
var allowedSignals = map[syscall.Signal]bool{syscall.SIGINT: true, syscall.SIGTERM: true, syscall.SIGHUP: true}

// outputGrace is how long output is still collected after the command
// exits, for grandchildren that hold its stdout.
const outputGrace = 2 * time.Second

// New resolves the binaries and fills in defaults.
func New(cfg Config) *Service {
	if len(cfg.Policy.Allow) == 0 {
		cfg.Policy.Allow = DefaultAllow
	}
	if len(cfg.Policy.EnvAllow) == 0 {
		cfg.Policy.EnvAllow = DefaultEnvAllow
	}
	if cfg.MaxConcurrent <= 0 {
		cfg.MaxConcurrent = 8
	}
	if cfg.QueueWait <= 0 {
		cfg.QueueWait = 10 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	s := &Service{cfg: cfg, bins: map[string]string{}, log: cfg.Logger, slots: map[tunnel.Identity]chan struct{}{}}
	var dirs []string
	for cmd := range cfg.Policy.Allow {
		name := cmd
		if b := cfg.Binaries[cmd]; b != "" {
			name = b
		}
		path, err := exec.LookPath(name)
		if err == nil {
			path, err = filepath.Abs(path)
		}
		if err != nil {
			s.log.Warn("relay: command not found on this host; relaying it will fail", "command", cmd, "looked_for", name)
			continue
		}
		s.bins[cmd] = path
		dirs = append(dirs, filepath.Dir(path))
		s.log.Info("relay: command available", "command", cmd, "binary", path)
	}
	if len(s.cfg.Env) == 0 {
		home, _ := os.UserHomeDir()
		path := "/usr/local/bin:/usr/bin:/bin"
		for _, d := range dirs {
			path = d + ":" + path
		}
		s.cfg.Env = []string{"PATH=" + path, "HOME=" + home}
	}
	return s
}

// ServeStream runs one relayed command.
func (s *Service) ServeStream(ctx context.Context, st *tunnel.Stream) {
	id := st.Session().Peer()
	w := tunnel.NewFrameWriter(st)
	fr := tunnel.NewFrameReader(st)
	_ = st.SetReadDeadline(time.Now().Add(10 * time.Second))
	typ, payload, err := fr.Next()
	_ = st.SetReadDeadline(time.Time{})
	if err == nil && typ != tunnel.FrameRequest {
		err = fmt.Errorf("first frame is %q, want a request", typ)
	}
	var req tunnel.RelayRequest
	if err == nil {
		req, err = tunnel.DecodeRelayRequest(payload)
	}
	if err != nil {
		s.refuse(w, id, "", "", fmt.Errorf("bad relay request: %w", err))
		return
	}
	cmd, sub, err := s.cfg.Policy.Check(req)
	if err != nil {
		s.refuse(w, id, cmd, sub, err)
		return
	}
	bin := s.bins[cmd]
	if bin == "" {
		s.refuse(w, id, cmd, sub, fmt.Errorf("%s is not installed on the host (set relay.%s in hostd's config)", cmd, cmd))
		return
	}
	release, err := s.acquire(ctx, id)
	if err != nil {
		s.refuse(w, id, cmd, sub, err)
		return
	}
	defer release()
	start := time.Now()
	exit, err := s.run(ctx, bin, id, req, fr, w)
	if err != nil {
		s.log.Warn("relayed command failed", "polecat", id, "command", cmd, "subcommand", sub, "duration", time.Since(start), "err", err)
		_ = w.Frame(tunnel.FrameError, []byte(err.Error()))
		return
	}
	s.log.Info("relayed command", "polecat", id, "command", cmd, "subcommand", sub, "exit", exit.Code, "signal", exit.Signal, "duration", time.Since(start))
	b, _ := json.Marshal(exit)
	_ = w.Frame(tunnel.FrameExit, b)
	_ = st.CloseWrite()
}

func (s *Service) refuse(w *tunnel.FrameWriter, id tunnel.Identity, cmd, sub string, err error) {
	s.log.Warn("refused relayed command", "polecat", id, "command", cmd, "subcommand", sub, "reason", err)
	_ = w.Frame(tunnel.FrameError, []byte(err.Error()))
}

// acquire takes one of the polecat's command slots, waiting up to
// QueueWait.
func (s *Service) acquire(ctx context.Context, id tunnel.Identity) (func(), error) {
	s.mu.Lock()
	ch := s.slots[id]
	if ch == nil {
		ch = make(chan struct{}, s.cfg.MaxConcurrent)
		s.slots[id] = ch
	}
	s.mu.Unlock()
	t := time.NewTimer(s.cfg.QueueWait)
	defer t.Stop()
	select {
	case ch <- struct{}{}:
		return func() { <-ch }, nil
	case <-t.C:
		return nil, fmt.Errorf("too many concurrent gt/bd commands from this polecat (limit %d, waited %v); try again", s.cfg.MaxConcurrent, s.cfg.QueueWait)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// run starts the command in its own process group and pumps its streams
// until it exits. If the stream ends first (the shim or the tunnel died),
// or the timeout passes, the whole group is killed.
func (s *Service) run(ctx context.Context, bin string, id tunnel.Identity, req tunnel.RelayRequest, fr *tunnel.FrameReader, w *tunnel.FrameWriter) (tunnel.RelayExit, error) {
	argv := make([]string, len(req.Argv))
	for i, a := range req.Argv {
		argv[i] = string(a)
	}
	env := append(append([]string{}, s.cfg.Env...), IdentityEnv(id)...)
	env = append(env, "GT_PROXY_CWD="+string(req.Cwd))
	for _, e := range req.Env {
		env = append(env, string(e))
	}
	p, err := startProcess(bin, argv, s.cfg.Town, env)
	if err != nil {
		return tunnel.RelayExit{}, err
	}

	var pumps sync.WaitGroup
	for _, o := range []struct {
		r   *os.File
		typ byte
	}{{p.stdout, tunnel.FrameStdout}, {p.stderr, tunnel.FrameStderr}} {
		pumps.Add(1)
		go func() {
			defer pumps.Done()
			if w.Copy(o.typ, o.r) != nil {
				_, _ = io.Copy(io.Discard, o.r) // the shim is gone; keep the command from blocking
			}
		}()
	}
	exited := make(chan struct{})
	go s.pumpInput(fr, p, exited)

	var timeout <-chan time.Time
	if s.cfg.Timeout > 0 {
		t := time.NewTimer(s.cfg.Timeout)
		defer t.Stop()
		timeout = t.C
	}
	waited := make(chan error, 1)
	go func() { waited <- p.cmd.Wait() }()
	var killedFor error
	select {
	case <-waited:
	case <-timeout:
		killedFor = fmt.Errorf("command killed after the relay timeout of %v", s.cfg.Timeout)
	case <-ctx.Done():
		killedFor = errors.New("hostd is shutting down")
	}
	if killedFor != nil {
		p.kill(syscall.SIGKILL)
		<-waited
	}
	close(exited)
	_ = p.stdin.Close()
	p.finishOutput(&pumps)
	if killedFor != nil {
		return tunnel.RelayExit{}, killedFor
	}
	return exitOf(p.cmd.ProcessState), nil
}

// pumpInput reads the shim's frames: stdin, its end, and signals. When the
// stream ends before the command has, nobody is listening any more and the
// process group is killed.
func (s *Service) pumpInput(fr *tunnel.FrameReader, p *process, exited <-chan struct{}) {
	for {
		typ, payload, err := fr.Next()
		if err != nil {
			select {
			case <-exited:
			default:
				s.log.Warn("relay stream ended before the command; killing its process group", "pid", p.cmd.Process.Pid, "err", err)
				p.kill(syscall.SIGKILL)
			}
			return
		}
		switch typ {
		case tunnel.FrameStdin:
			_, _ = p.stdin.Write(payload) // fails once the command stops reading; the rest is dropped
		case tunnel.FrameStdinClose:
			_ = p.stdin.Close()
		case tunnel.FrameSignal:
			if len(payload) == 1 && allowedSignals[syscall.Signal(payload[0])] {
				p.kill(syscall.Signal(payload[0]))
			}
		}
	}
}

// exitOf is the exit status as a shell shows it.
func exitOf(ps *os.ProcessState) tunnel.RelayExit {
	ws, ok := ps.Sys().(syscall.WaitStatus)
	if ok && ws.Signaled() {
		return tunnel.RelayExit{Code: 128 + int(ws.Signal()), Signal: int(ws.Signal())}
	}
	return tunnel.RelayExit{Code: ps.ExitCode()}
}
