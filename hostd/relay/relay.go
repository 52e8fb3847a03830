// Package relay is hostd's side of the gt/bd relay: for each relay stream
// it checks the command line (hostd/relay/grammar), takes one of the
// polecat's slots within its rate, finds the polecat's place in the town
// (hostd/relay/gastown) and decides how the command runs there: a Gas
// Town host polecat session's environment and hostd's own (the rig's
// beads, git's configuration, a temporary directory), confined by the
// kernel to what the polecat may touch (hostd/confine). It streams stdin,
// stdout and stderr, forwards signals to the process group, and kills
// that group when the stream or the tunnel dies.
package relay

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os/exec"
	"path/filepath"
	"slices"
	"time"

	"github.com/polecat-sidecar/sidecar/hostd/confine"
	"github.com/polecat-sidecar/sidecar/hostd/limits"
	"github.com/polecat-sidecar/sidecar/hostd/relay/grammar"
	"github.com/polecat-sidecar/sidecar/hostd/state"
	"github.com/polecat-sidecar/sidecar/internal/logging"
	"github.com/polecat-sidecar/sidecar/internal/settings"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// Config configures the relay service.
type Config struct {
	// Town is the Gas Town root. A relayed command runs in the polecat's
	// worktree there, else its rig's directory, else the town (see
	// gastown.Locate).
	Town string
	// Binaries maps a command to its binary. A missing or relative entry is
	// looked up in hostd's PATH when the service starts; the absolute path
	// found then is what runs.
	Binaries map[string]string
	// Policy is the allowlist; grammar.DefaultAllow and grammar.DefaultEnvAllow where
	// empty.
	Policy grammar.Policy
	// Env are KEY=VALUE entries added to, or replacing, the base
	// environment of relayed commands: PATH (the binaries' directories and
	// the system ones) and HOME. hostd's own environment is not passed on,
	// and the polecat's session variables (gastown.PolecatEnv) cannot be
	// replaced.
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

// DefaultConfig allows Gas Town's usual commands (grammar.DefaultAllow), 8 at once
// per polecat, a ninth waiting up to 10 s, 600 a minute per polecat (10 a
// second, gt-proxy-server's exec_rate_limit: more than a loop of relayed
// bd commands, some 170 ms each, runs; Gas Town's hooks run a few a
// prompt), with no time limit; each holds up to 1 MiB of stdin it has not
// read, and is killed after 10 s of not reading a full buffer. Binaries
// and Env are found at start when empty (see New).
func DefaultConfig() Config {
	return Config{
		Policy:            grammar.Policy{Allow: grammar.DefaultAllow, EnvAllow: grammar.DefaultEnvAllow}, // Allow not empty
		MaxConcurrent:     8,                                                                              // at least 1
		QueueWait:         10 * time.Second,                                                               // above 0
		CommandsPerMinute: 600,                                                                            // at least 1
		Timeout:           0,                                                                              // no limit; 0 or above
		MaxStdinBuffer:    1 << 20,                                                                        // at least 1
		StdinStall:        10 * time.Second,                                                               // above 0
		Logger:            slog.Default(),
	}
}

// Validate names each field out of its range; New calls it once zero
// fields have their defaults.
func (c Config) Validate() error {
	allow := c.Policy.Validate()
	if len(c.Policy.Allow) == 0 {
		allow = &settings.FieldError{Field: "Policy.Allow", Value: c.Policy.Allow, Rule: "it must allow at least one command (unset, it is grammar.DefaultAllow)"}
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
	// check is cfg.Policy's check of a command line; a test of the
	// confinement alone replaces it.
	check func(wire.RelayRequest) (grammar.Parsed, error)

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
	s := &Service{cfg: cfg, bins: map[string]string{}, log: cfg.Logger, check: cfg.Policy.Check, slots: limits.NewSlots(cfg.MaxConcurrent),
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
