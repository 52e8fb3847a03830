package relay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/polecat-sidecar/sidecar/hostd/confine"
	"github.com/polecat-sidecar/sidecar/hostd/limits"
	"github.com/polecat-sidecar/sidecar/hostd/state"
	"github.com/polecat-sidecar/sidecar/internal/logging"
	"github.com/polecat-sidecar/sidecar/internal/settings"
	"github.com/polecat-sidecar/sidecar/tunnel"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// Config configures the relay service.
type Config struct {
	// Town is the Gas Town root. A relayed command runs in the polecat's
	// worktree there, else its rig's directory, else the town (see
	// workDir).
	Town string
	// Binaries maps a command to its binary. A missing or relative entry is
	// looked up in hostd's PATH when the service starts; the absolute path
	// found then is what runs.
	Binaries map[string]string
	// Policy is the allowlist; DefaultAllow and DefaultEnvAllow where
	// empty.
	Policy Policy
	// Env are KEY=VALUE entries added to, or replacing, the base
	// environment of relayed commands: PATH (the binaries' directories and
	// the system ones) and HOME. hostd's own environment is not passed on,
	// and the polecat's session variables (PolecatEnv) cannot be replaced.
	Env []string
	// MaxConcurrent bounds the commands one polecat runs at once.
	MaxConcurrent int
	// QueueWait is how long a command over the limit waits for a slot
	// before it is refused.
	QueueWait time.Duration
	// CommandsPerMinute bounds the commands one polecat may start: a burst
	// of that many, then that many a minute, evenly. Each command may
	// write to the town (gt costs record appends to the cost log, an
	// escalation makes a bead, mail and a log line); over it, a command is
	// refused, saying when to try again.
	CommandsPerMinute int
	// Timeout, when set, kills commands that run longer.
	Timeout time.Duration
	// AllowUnconfined relays commands unconfined where the system cannot
	// confine them (no Landlock, no sandbox-exec); otherwise hostd refuses
	// to relay there.
	AllowUnconfined bool
	// MaxStdinBuffer bounds the stdin hostd holds for one command that has
	// not read it yet; beyond it, the tunnel stream is read only as fast as
	// the command reads.
	MaxStdinBuffer int
	// StdinStall is how long a command may leave its stdin unread with
	// MaxStdinBuffer waiting before it is killed, with an error naming
	// both settings.
	StdinStall time.Duration
	// Cycle, when set, is called once a relayed 'gt handoff --cycle' has
	// exited 0 and the shim has its status. Relayed, gt runs outside any
	// tmux pane, so it saves the state and does not respawn the session;
	// Cycle does (hostd serve: sandbox.Panes.Respawn).
	Cycle func(ctx context.Context, id wire.Identity)
	// Logger receives one line per relayed command.
	Logger *slog.Logger
}

// DefaultConfig allows Gas Town's usual commands (DefaultAllow), 8 at once
// per polecat, a ninth waiting up to 10 s, 600 a minute per polecat (10 a
// second, gt-proxy-server's exec_rate_limit: more than a loop of relayed
// bd commands, some 170 ms each, runs; Gas Town's hooks run a few a
// prompt), with no time limit; each holds up to 1 MiB of stdin it has not
// read, and is killed after 10 s of not reading a full buffer. Binaries
// and Env are found at start when empty (see New).
func DefaultConfig() Config {
	return Config{
		Policy:            Policy{Allow: DefaultAllow, EnvAllow: DefaultEnvAllow}, // Allow not empty
		MaxConcurrent:     8,                                                      // at least 1
		QueueWait:         10 * time.Second,                                       // above 0
		CommandsPerMinute: 600,                                                    // at least 1
		Timeout:           0,                                                      // no limit; 0 or above
		MaxStdinBuffer:    1 << 20,                                                // at least 1
		StdinStall:        10 * time.Second,                                       // above 0
		Logger:            slog.Default(),
	}
}

// Validate names each field out of its range; New calls it once zero
// fields have their defaults.
func (c Config) Validate() error {
	allow := c.Policy.Validate()
	if len(c.Policy.Allow) == 0 {
		allow = &settings.FieldError{Field: "Policy.Allow", Value: c.Policy.Allow, Rule: "it must allow at least one command (unset, it is DefaultAllow)"}
	}
	return errors.Join(
		allow,
		settings.Positive("MaxConcurrent", c.MaxConcurrent),
		settings.Positive("QueueWait", c.QueueWait),
		settings.Positive("CommandsPerMinute", c.CommandsPerMinute),
		settings.AtLeast("Timeout", c.Timeout, 0),
		settings.Positive("MaxStdinBuffer", c.MaxStdinBuffer),
		settings.Positive("StdinStall", c.StdinStall),
	)
}

// Service serves relay streams.
type Service struct {
	cfg  Config
	bins map[string]string
	log  *slog.Logger

	metrics *metrics
	base    []string // PATH, HOME and relay.env, see baseEnv
	binDirs []string // PATH's directories that relayed commands may read and run (see runnableDirs)
	home    string   // HOME of relayed commands
	dir     string   // the relay's state directory (state.Dir.Relay)
	// support is how this system confines relayed commands; where it
	// cannot, relaying is refused unless AllowUnconfined.
	support confine.Support

	slots *limits.Slots // each polecat's MaxConcurrent
	rate  *limits.Rate  // each polecat's CommandsPerMinute

	logLimit *logging.Limiter // refusals, per polecat
}

// allowedSignals are the signals a shim may forward.
var allowedSignals = map[syscall.Signal]bool{syscall.SIGINT: true, syscall.SIGTERM: true, syscall.SIGHUP: true}

// outputGrace is how long output is still collected after the command
// exits, for grandchildren that hold its stdout.
const outputGrace = 2 * time.Second

// New resolves the binaries, refusing one built from this project (see
// resolve) and warning of a missing one; zero Config fields (and a zero Policy.Allow
// or Policy.EnvAllow) take DefaultConfig's.
func New(cfg Config) (*Service, error) {
	d := DefaultConfig()
	settings.FillZero(&cfg, d)
	settings.FillZero(&cfg.Policy, d.Policy)
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("relay: %w", err)
	}
	s := &Service{cfg: cfg, bins: map[string]string{}, log: cfg.Logger, slots: limits.NewSlots(cfg.MaxConcurrent),
		rate: limits.NewRate(cfg.CommandsPerMinute, time.Minute), metrics: newMetrics(),
		logLimit: logging.NewLimiter(30, time.Minute)}
	var dirs []string
	var refused []error
	for _, cmd := range slices.Sorted(maps.Keys(cfg.Policy.Allow)) {
		name := cmd
		if b := cfg.Binaries[cmd]; b != "" {
			name = b
		}
		path, err := resolve(cmd, name)
		var notFound *exec.Error
		if errors.As(err, &notFound) {
			s.log.Warn("relay: command not found on this host; relaying it will fail", "command", cmd, "looked_for", name, "err", err)
			continue
		}
		if err != nil {
			refused = append(refused, err)
			continue
		}
		s.bins[cmd] = path
		dirs = append(dirs, filepath.Dir(path))
		s.log.Info("relay: command available", "command", cmd, "binary", path)
	}
	if len(refused) > 0 {
		return nil, fmt.Errorf("relay: %w", errors.Join(refused...))
	}
	s.base = baseEnv(dirs, cfg.Env)
	s.home = getenv(s.base)("HOME")
	s.binDirs = s.runnableDirs(filepath.SplitList(getenv(s.base)("PATH")))
	s.support = confine.Probe()
	switch {
	case s.support.Available():
		s.log.Info("relay: relayed commands are confined by the kernel", "confinement", s.support.String())
	case cfg.AllowUnconfined:
		s.log.Warn("relay: relayed commands run UNCONFINED: a grammar mistake would let a polecat act as the operator (relay.allow_unconfined is set)",
			"confinement", s.support.String())
	default:
		s.log.Error("relay: relaying is refused: this system cannot confine relayed commands; set relay.allow_unconfined to relay without",
			"confinement", s.support.String())
	}
	if cfg.Town != "" {
		s.dir = state.For(cfg.Town).Relay()
		if err := writeGitConfig(s.dir, s.base); err != nil {
			return nil, fmt.Errorf("relay: %w", err)
		}
	}
	return s, nil
}

// Confinement is how relayed commands are confined here (or why they
// cannot be), whether they are, and whether relaying is refused for it
// (the system cannot confine and relay.allow_unconfined is off).
func (s *Service) Confinement() (how string, confined, refused bool) {
	if s.support.Available() {
		return s.support.String(), true, false
	}
	return s.support.Reason, false, !s.cfg.AllowUnconfined
}

// ServeStream runs one relayed command.
func (s *Service) ServeStream(ctx context.Context, st *tunnel.Stream) {
	id := st.Session().Peer()
	arrived := time.Now() // for the trace, which logs nothing before the request is accepted
	w := wire.NewRelayFrameWriter(st)
	fr := wire.NewRelayFrameReader(st)
	_ = st.SetReadDeadline(time.Now().Add(10 * time.Second))
	typ, payload, err := fr.Next()
	_ = st.SetReadDeadline(time.Time{})
	if err == nil && typ != wire.RelayFrameRequest {
		err = fmt.Errorf("first frame is %q, want a request", typ)
	}
	var req wire.RelayRequest
	if err == nil {
		req, err = wire.DecodeRelayRequest(payload)
	}
	if err != nil {
		s.refuse(w, id, "", "", fmt.Errorf("bad relay request: %w", err))
		return
	}
	line, err := s.cfg.Policy.Check(req)
	cmd, sub, _ := strings.Cut(line.path, " ")
	if err != nil {
		s.refuse(w, id, cmd, sub, err)
		return
	}
	bin := s.bins[cmd]
	if bin == "" {
		s.refuse(w, id, cmd, sub, fmt.Errorf("%s is not installed on the host (set relay.%s in hostd's config)", cmd, cmd))
		return
	}
	if how, _, refused := s.Confinement(); refused {
		s.refuse(w, id, cmd, sub, fmt.Errorf("hostd cannot confine relayed commands on this host (%s): the operator must fix that or set relay.allow_unconfined", how))
		return
	}
	if ok, wait := s.rate.Take(id); !ok {
		limits.Hit(limits.RelayRate)
		s.refuse(w, id, cmd, sub, fmt.Errorf("more than %d gt/bd commands in a minute from this polecat (relay.commands_per_minute): try again in %v",
			s.cfg.CommandsPerMinute, wait.Truncate(100*time.Millisecond)+100*time.Millisecond))
		return
	}
	release, err := s.acquire(ctx, id)
	if err != nil {
		s.refuse(w, id, cmd, sub, err)
		return
	}
	defer release()
	s.trace(ctx, id, "request", "stream_at", arrived)
	start := time.Now()
	exit, err := s.run(ctx, st.Session().Done(), bin, id, req, line, fr, w)
	s.metrics.observe(cmd, exit, err, time.Since(start))
	if err != nil {
		s.log.Warn("relayed command failed", "polecat", id, "command", cmd, "subcommand", sub, "duration", time.Since(start), "err", err)
		_ = w.Frame(wire.RelayFrameError, []byte(err.Error()))
		return
	}
	s.log.Info("relayed command", "polecat", id, "command", cmd, "subcommand", sub, "exit", exit.Code, "signal", exit.Signal, "duration", time.Since(start))
	b, _ := json.Marshal(exit)
	s.trace(ctx, id, "exit")
	_ = w.Frame(wire.RelayFrameExit, b)
	_ = st.CloseWrite()
	if s.cfg.Cycle != nil && exit.Code == 0 && exit.Signal == 0 && line.cycles() {
		s.cfg.Cycle(ctx, id)
	}
}

// trace logs, at debug level, that a relayed command reached step: with
// the agent's forward trace, the timeline BenchmarkRelayTrace reads. Only
// an accepted command is traced, so its lines are as many as the
// commands a polecat's slots let it run, never one per refused stream.
func (s *Service) trace(ctx context.Context, id wire.Identity, step string, attrs ...any) {
	if s.log.Enabled(ctx, slog.LevelDebug) {
		s.log.Debug("relay trace", append([]any{"polecat", id, "step", step}, attrs...)...)
	}
}

func (s *Service) refuse(w *wire.RelayFrameWriter, id wire.Identity, cmd, sub string, err error) {
	s.metrics.refused(cmd)
	if ok, held := s.logLimit.Allow(id.String()); ok {
		s.log.Warn("refused relayed command", "polecat", id, "command", cmd, "subcommand", sub, "reason", err, "lines_not_logged", held)
	}
	_ = w.Frame(wire.RelayFrameError, []byte(err.Error()))
}

// acquire takes one of the polecat's command slots, waiting up to
// QueueWait.
func (s *Service) acquire(ctx context.Context, id wire.Identity) (func(), error) {
	release, err := s.slots.Take(ctx, id, s.cfg.QueueWait)
	if errors.Is(err, limits.ErrBusy) {
		return nil, fmt.Errorf("too many concurrent gt/bd commands from this polecat (limit %d, waited %v); try again", s.cfg.MaxConcurrent, s.cfg.QueueWait)
	}
	return release, err
}

// run starts the command in its own process group and pumps its streams
// until it exits. It kills the whole group when the shim is gone (the
// agent says so, the stream ends before the shim closed stdin, or the
// output cannot be delivered), when the polecat's tunnel ends, when the
// command stops reading a full stdin budget, on the timeout, and when
// hostd shuts down.
func (s *Service) run(ctx context.Context, tunnelDone <-chan struct{}, bin string, id wire.Identity, req wire.RelayRequest, line parsed,
	fr *wire.RelayFrameReader, w *wire.RelayFrameWriter) (wire.RelayExit, error) {
	argv := make([]string, len(req.Argv))
	for i, a := range req.Argv {
		argv[i] = string(a)
	}
	c, err := s.prepare(id, req, line)
	if err != nil {
		return wire.RelayExit{}, err
	}
	p, err := startProcess(bin, argv, c)
	if err != nil {
		return wire.RelayExit{}, err
	}
	s.trace(ctx, id, "started")
	stop := make(chan error, 3) // why the command must be killed: input, output, output
	var pumps sync.WaitGroup
	for _, o := range []struct {
		r   *os.File
		typ byte
	}{{p.stdout, wire.RelayFrameStdout}, {p.stderr, wire.RelayFrameStderr}} {
		pumps.Add(1)
		go func() {
			defer pumps.Done()
			if err := w.Copy(o.typ, o.r); err != nil {
				stop <- fmt.Errorf("the shim is gone: delivering output failed: %w", err)
				_, _ = io.Copy(io.Discard, o.r) // keep the command from blocking until it is killed
			}
		}()
	}
	stdin := newStdinQueue(s.cfg.MaxStdinBuffer, s.cfg.StdinStall)
	go stdin.feed(p.stdin)
	go s.pumpInput(fr, p, stdin, stop)

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
	case err := <-stop:
		killedFor = err
	case <-tunnelDone:
		killedFor = errors.New("the polecat's tunnel ended")
	case <-timeout:
		killedFor = fmt.Errorf("command killed after the relay timeout of %v", s.cfg.Timeout)
	case <-ctx.Done():
		killedFor = errors.New("hostd is shutting down")
	}
	s.trace(ctx, id, "exited")
	if killedFor != nil {
		if errors.Is(killedFor, errStdinStalled) {
			limits.Hit(limits.RelayStdin)
		}
		p.kill(syscall.SIGKILL)
		<-waited
	}
	stdin.abandon()
	_ = p.stdin.Close()
	p.finishOutput(&pumps)
	if killedFor != nil {
		return wire.RelayExit{}, fmt.Errorf("killed the command's process group: %w", killedFor)
	}
	return exitOf(p.cmd.ProcessState), nil
}

// pumpInput reads the shim's frames: stdin, its end, signals, and the
// agent's word that the shim is gone. The stream ending before the shim
// said its stdin ended means the shim is gone too; after that, it is the
// half-close the protocol allows, and the command runs on.
func (s *Service) pumpInput(fr *wire.RelayFrameReader, p *process, stdin *stdinQueue, stop chan<- error) {
	stdinClosed := false
	for {
		typ, payload, err := fr.Next()
		if err != nil {
			if errors.Is(err, io.EOF) && stdinClosed {
				return
			}
			stop <- fmt.Errorf("the shim is gone: the relay stream ended: %w", err)
			return
		}
		switch typ {
		case wire.RelayFrameStdin:
			if err := stdin.push(payload); err != nil {
				stop <- err
				return
			}
		case wire.RelayFrameStdinClose:
			stdinClosed = true
			stdin.end()
		case wire.RelayFrameSignal:
			if len(payload) == 1 && allowedSignals[syscall.Signal(payload[0])] {
				p.kill(syscall.Signal(payload[0]))
			}
		case wire.RelayFrameGone:
			stop <- errors.New("the shim is gone")
			return
		}
	}
}

// exitOf is the exit status as a shell shows it.
func exitOf(ps *os.ProcessState) wire.RelayExit {
	ws, ok := ps.Sys().(syscall.WaitStatus)
	if ok && ws.Signaled() {
		return wire.RelayExit{Code: 128 + int(ws.Signal()), Signal: int(ws.Signal())}
	}
	return wire.RelayExit{Code: ps.ExitCode()}
}
