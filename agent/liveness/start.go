package liveness

import (
	"context"
	"strings"

	"github.com/polecat-sidecar/sidecar/agent/tmux"
)

// statusOption is the tmux session option holding the path its wrapper
// records the exit status in, so that a restarted agent finds it.
const statusOption = "@gt-agent-status-file"

// commandOption is the tmux session option holding the polecat's command
// line, which the session's wrapper runs: what the beats report.
const commandOption = "@gt-agent-command"

// startOrAdopt gives the polecat's command a session. A polecat's session
// outlives its agent (an upgrade, a crash, an OOM kill of the agent
// alone), so a session already there is taken over: a live pane is
// watched as it is, never started twice; a dead one has its exit recorded
// and the command is started afresh in it.
func (w *Watcher) startOrAdopt(ctx context.Context) error {
	name := w.cfg.Name
	pane, found, err := w.tmux.ReadPane(ctx, name)
	if err != nil {
		return err
	}
	if found {
		w.status, err = w.tmux.Option(ctx, name, statusOption)
		if err != nil {
			return err
		}
	}
	if found && !pane.Dead {
		w.log.Info("adopted the running session a previous agent started; not starting the command again",
			"tmux_session", name, "pid", pane.PID, "command", pane.Command)
		return nil
	}
	// The dead command's status, from the file its wrapper wrote, before
	// wrapped() points w.status at this agent's own file.
	attrs := []any{"tmux_session", name, "command", strings.Join(w.cfg.Command, " ")}
	if found {
		if code, ok := readStatus(w.status); ok {
			attrs = append(attrs, "exit_code", code)
		} else if pane.ExitCode != nil {
			attrs = append(attrs, "exit_code", *pane.ExitCode)
		}
	}
	argv, opts, err := w.wrapped()
	if err != nil {
		return err
	}
	sp := tmux.Spawn{Argv: argv, Options: opts}
	if !found {
		if err := w.tmux.NewSession(ctx, name, sp); err != nil {
			return err
		}
		w.log.Info("session started", "tmux_session", name, "command", strings.Join(w.cfg.Command, " "))
		return nil
	}
	if err := w.tmux.Respawn(ctx, name, sp); err != nil {
		return err
	}
	w.log.Info("the session's command had exited before this agent started; started it afresh", attrs...)
	return nil
}

// wrapped is the command line run in the session, under 'gt-agent
// session-run' which records the exit status, and the session options
// that say where.
func (w *Watcher) wrapped() (argv []string, opts map[string]string, err error) {
	argv, opts, w.status, err = wrap(w.cfg.Name, w.cfg.Command)
	return argv, opts, err
}

// logExisting says what --watch-session found at start.
func (w *Watcher) logExisting(ctx context.Context) {
	pane, found, err := w.tmux.ReadPane(ctx, w.cfg.WatchSession)
	switch {
	case err != nil:
		w.log.Warn("reading the session to watch failed", "tmux_session", w.cfg.WatchSession, "err", err)
	case !found:
		w.log.Warn("no such tmux session yet; beats say so until it appears", "tmux_session", w.cfg.WatchSession)
	case pane.Dead:
		w.log.Info("watching a session whose command has exited", "tmux_session", w.cfg.WatchSession)
	default:
		w.log.Info("watching the running session", "tmux_session", w.cfg.WatchSession, "pid", pane.PID)
	}
}
