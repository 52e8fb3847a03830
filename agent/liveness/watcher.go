// Package liveness is gt-agent's half of the heartbeat channel (hostd's
// is hostd/liveness): it starts the polecat's command in a tmux session
// inside the container (so nudges and a human 'tmux attach' work), or
// watches an existing session or process, measures it, and sends hostd a
// beat on its own stream every interval.
package liveness

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/polecat-sidecar/sidecar/agent/tmux"
	"github.com/polecat-sidecar/sidecar/heartbeat"
	"github.com/polecat-sidecar/sidecar/internal/settings"
)

// Config says what to supervise. At most one of Command, WatchSession and
// WatchProcess is set; with none, beats report that no session is watched.
type Config struct {
	// Name is the tmux session to start (with Command).
	Name string
	// Command is started in a new tmux session Name.
	Command []string
	// WatchSession is an existing tmux session to watch.
	WatchSession string
	// WatchProcess is a process (by name) to watch without tmux.
	WatchProcess string
	// TmuxArgs are global tmux arguments (e.g. -S socket).
	TmuxArgs []string
	// WorkDir is where disk space is measured.
	WorkDir string
	// StartedMark is a file recording, across restarts of the agent and of
	// its container, that the watched session has run here: until it
	// exists, a session not found has not started yet (a sandbox before
	// its first session), and beats say so. "" keeps that record for the
	// agent's life only.
	StartedMark string
	// Logger receives session state changes.
	Logger *slog.Logger
}

// DefaultSession is the tmux session the polecat's command is started in.
const DefaultSession = "polecat"

// DefaultConfig starts the command (when there is one) in the "polecat"
// session and measures the working directory's disk. Command,
// WatchSession, WatchProcess and TmuxArgs have no default.
func DefaultConfig() Config {
	return Config{
		Name:    DefaultSession,
		WorkDir: ".",
		Logger:  slog.Default(),
	}
}

// Watcher measures the supervised session.
type Watcher struct {
	cfg     Config
	log     *slog.Logger
	sampler *heartbeat.TreeSampler
	tmux    tmux.Server
	root    heartbeat.ProcID
	rootPID int
	seen    bool
	last    string
	// status is where the started session's wrapper records the exit
	// status ("" when watching a session the agent did not start).
	status string
	// exitReason is what the dead pane said (see readExitReason), kept
	// once found until the session runs again.
	exitReason string
	// command is the polecat's command line as the session's starter
	// recorded it (commandOption), for the pane process commandPID.
	command    string
	commandPID int
	// started says a session has run here (see Config.StartedMark).
	started bool
}

// Start starts the session's command when there is one (or adopts the
// session a previous agent started, see startOrAdopt), and returns a
// watcher for it; zero Config fields take DefaultConfig's.
func Start(ctx context.Context, cfg Config) (*Watcher, error) {
	settings.FillZero(&cfg, DefaultConfig())
	s, err := heartbeat.NewTreeSampler("")
	if err != nil {
		return nil, err
	}
	w := &Watcher{cfg: cfg, log: cfg.Logger, sampler: s, tmux: tmux.Server{Args: cfg.TmuxArgs}}
	if cfg.StartedMark != "" {
		_, err := os.Stat(cfg.StartedMark)
		w.started = err == nil
	}
	switch {
	case len(cfg.Command) > 0:
		w.cfg.WatchSession = w.cfg.Name
		if err := w.startOrAdopt(ctx); err != nil {
			return nil, err
		}
	case cfg.WatchSession != "":
		w.logExisting(ctx)
	}
	return w, nil
}

// StopStarted ends the session the watcher started for its command (or
// adopted from an earlier agent that did), with the command, and says
// which; a session or process it only watches it leaves alone ("").
func (w *Watcher) StopStarted(ctx context.Context) (string, error) {
	if len(w.cfg.Command) == 0 {
		return "", nil
	}
	if err := w.tmux.Kill(ctx, w.cfg.Name); err != nil {
		return "", fmt.Errorf("stopping tmux session %s: %w", w.cfg.Name, err)
	}
	return w.cfg.Name, nil
}

// Measure takes the session part of a beat.
func (w *Watcher) Measure(ctx context.Context, now time.Time) heartbeat.Session {
	var s heartbeat.Session
	switch {
	case w.cfg.WatchSession != "":
		s = w.measureSession(ctx, now)
	case w.cfg.WatchProcess != "":
		s = w.measureProcess(now)
	default:
		s = heartbeat.Session{State: heartbeat.SessionNotFound, IdleSeconds: -1}
	}
	switch {
	case s.State != heartbeat.SessionNotFound:
		w.markStarted()
	case s.Name != "" && !w.started:
		s.NeverStarted = true
	}
	if desc := s.State + fmt.Sprint(s.ExitCode != nil) + s.ExitReason; desc != w.last {
		w.last = desc
		attrs := []any{"session", s.Name, "state", s.State}
		if s.ExitCode != nil {
			attrs = append(attrs, "exit_code", *s.ExitCode)
		}
		if s.ExitReason != "" {
			attrs = append(attrs, "exit_reason", s.ExitReason)
		}
		w.log.Info("session state", attrs...)
	}
	return s
}

func (w *Watcher) measureSession(ctx context.Context, now time.Time) heartbeat.Session {
	s := heartbeat.Session{Name: w.cfg.WatchSession, IdleSeconds: -1}
	p, found, err := w.tmux.ReadPane(ctx, w.cfg.WatchSession)
	switch {
	case err != nil:
		w.log.Warn("reading the session from tmux failed", "err", err)
		s.State = heartbeat.SessionNotFound
		return s
	case !found:
		s.State = heartbeat.SessionNotFound
		return s
	}
	s.Command = w.commandOf(ctx, p)
	if p.Dead {
		s.State, s.ExitCode = heartbeat.SessionExited, p.ExitCode
		status := w.status
		if status == "" { // a session started by 'gt-agent session start'
			status, _ = w.tmux.Option(ctx, w.cfg.WatchSession, statusOption)
		}
		if code, ok := readStatus(status); ok {
			s.ExitCode = &code
		}
		if s.ExitCode != nil && (*s.ExitCode == heartbeat.ExitNotFound || *s.ExitCode == heartbeat.ExitCannotRun) {
			s.ExitReason = w.readExitReason(ctx)
		}
		return s
	}
	w.exitReason = ""
	if p.PID != w.rootPID {
		id, err := w.sampler.Identify(p.PID)
		if err != nil {
			s.State = heartbeat.SessionExited
			return s
		}
		w.root, w.rootPID = id, p.PID
	}
	w.fill(&s, now)
	if !p.Activity.IsZero() {
		s.IdleSeconds = max(now.Sub(p.Activity).Seconds(), 0)
	}
	return s
}

// markStarted records that a session has run here, in the
// StartedMark file too.
func (w *Watcher) markStarted() {
	if w.started {
		return
	}
	w.started = true
	if w.cfg.StartedMark == "" {
		return
	}
	if err := os.WriteFile(w.cfg.StartedMark, nil, 0o600); err != nil {
		w.log.Warn("recording that the session has started failed; a restarted agent will say it has not until it runs again",
			"file", w.cfg.StartedMark, "err", err)
	}
}

// commandOf is the polecat's command in pane p, for the beats, cut to
// heartbeat.MaxCommand bytes: as the session's starter recorded it (the
// pane's own command line is gt-agent's wrapper), read again only for a
// new pane process; else the one the watcher was given, else the pane's.
func (w *Watcher) commandOf(ctx context.Context, p tmux.Pane) string {
	if p.PID != w.commandPID || w.command == "" {
		c, err := w.tmux.Option(ctx, w.cfg.WatchSession, commandOption)
		if err != nil {
			w.log.Warn("reading the session's command from tmux failed", "tmux_session", w.cfg.WatchSession, "err", err)
		}
		w.command, w.commandPID = clip(c, heartbeat.MaxCommand), p.PID
	}
	return cmp.Or(w.command, clip(strings.Join(w.cfg.Command, " "), heartbeat.MaxCommand), clip(p.Command, heartbeat.MaxCommand))
}

// clip is s cut to at most n bytes of valid UTF-8.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "")
}

// readExitReason is the dead pane's last line, which says why its
// command could not be run (the session-run wrapper's "gt-agent: command
// not found: claude", or a shell's "bash: claude: command not found"),
// read again at each beat until there is one: tmux may show the pane dead
// before it has read the command's last output.
func (w *Watcher) readExitReason(ctx context.Context) string {
	if w.exitReason != "" {
		return w.exitReason
	}
	text, err := w.tmux.History(ctx, w.cfg.WatchSession, exitReasonLines)
	if err != nil {
		w.log.Warn("reading the dead pane's last lines failed", "tmux_session", w.cfg.WatchSession, "err", err)
		return ""
	}
	w.exitReason = lastLine(text)
	return w.exitReason
}

// exitReasonLines is how many of a dead pane's last lines are searched.
const exitReasonLines = 20

// lastLine is the last line of a pane's text other than blank ones and
// tmux's own "Pane is dead" notice, cut to heartbeat.MaxExitReason bytes.
func lastLine(text string) string {
	lines := strings.Split(text, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		l := strings.TrimSpace(lines[i])
		if l == "" || strings.HasPrefix(l, "Pane is dead") {
			continue
		}
		return clip(l, heartbeat.MaxExitReason)
	}
	return ""
}

func (w *Watcher) measureProcess(now time.Time) heartbeat.Session {
	s := heartbeat.Session{Name: w.cfg.WatchProcess, IdleSeconds: -1}
	if !w.seen {
		id, ok := w.sampler.FindProcess(w.cfg.WatchProcess)
		if !ok {
			s.State = heartbeat.SessionNotFound
			return s
		}
		w.root, w.seen = id, true
	}
	w.fill(&s, now)
	return s
}

// fill measures the tree under the current root: running, or exited when
// that process is gone (its pid may have been reused: the start time says).
func (w *Watcher) fill(s *heartbeat.Session, now time.Time) {
	st, found, err := w.sampler.Sample(w.root, now)
	if err != nil || !found {
		s.State = heartbeat.SessionExited
		return
	}
	s.State = heartbeat.SessionRunning
	s.Processes, s.Names = st.Processes, st.Names
	s.CPUSeconds, s.CPUPercent = st.CPUSeconds, st.CPUPercent
	s.RSSBytes, s.Threads = st.RSSBytes, st.Threads
}

// Container measures the container's load.
func (w *Watcher) Container() heartbeat.Container { return w.sampler.ContainerStats(w.cfg.WorkDir) }
