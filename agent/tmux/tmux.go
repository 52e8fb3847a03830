// Package tmux is every tmux operation gt-agent does: starting the
// polecat's session, reading its pane for beats, and next pasting nudges
// and capturing the screen for peek.
package tmux

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// Server is one tmux server, reached with global arguments (e.g. -S
// socket; none for tmux's default server).
type Server struct {
	// Args are tmux's global arguments.
	Args []string
}

// command is a tmux invocation with the server's global arguments.
func (t Server) command(ctx context.Context, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, "tmux", append(append([]string{}, t.Args...), args...)...)
}

// NewSession starts argv in a new detached session called name (200x50),
// with the user options opts (names starting with '@') set on it.
// remain-on-exit is set first, in the same call, so that a command that
// exits at once still leaves its dead pane (and its status) for the beats.
func (t Server) NewSession(ctx context.Context, name string, argv []string, opts map[string]string) error {
	args := append([]string{"start-server", ";", "set-option", "-g", "remain-on-exit", "on", ";",
		"new-session", "-d", "-s", name, "-x", "200", "-y", "50", "--"}, argv...)
	for k, v := range opts {
		args = append(args, ";", "set-option", "-t", "="+name+":", k, v)
	}
	if out, err := t.command(ctx, args...).CombinedOutput(); err != nil {
		return fmt.Errorf("starting tmux session %q: %v: %s", name, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// Respawn replaces the process of session name's first pane (a dead one:
// the pane keeps its place, its history and anyone attached) with argv,
// and sets the user options opts.
func (t Server) Respawn(ctx context.Context, name string, argv []string, opts map[string]string) error {
	args := append([]string{"respawn-pane", "-k", "-t", "=" + name + ":", "--"}, argv...)
	for k, v := range opts {
		args = append(args, ";", "set-option", "-t", "="+name+":", k, v)
	}
	if out, err := t.command(ctx, args...).CombinedOutput(); err != nil {
		return fmt.Errorf("restarting tmux session %q: %v: %s", name, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// Option reads the user option opt of session name; "" when unset.
func (t Server) Option(ctx context.Context, name, opt string) (string, error) {
	out, err := t.command(ctx, "show-options", "-v", "-q", "-t", "="+name+":", opt).Output()
	if err != nil {
		return "", fmt.Errorf("reading tmux option %s of %q: %w", opt, name, err)
	}
	return strings.TrimRight(string(out), "\n"), nil
}

// Pane is what tmux says of a session's (first) pane.
type Pane struct {
	// PID is the pane's process, the root of the session's tree.
	PID int
	// Dead is true when that process has exited (remain-on-exit keeps the
	// pane, and its status).
	Dead bool
	// ExitCode is the dead pane's exit status (128+signal when a signal
	// killed it); nil while tmux has not yet collected it (the pane can show
	// dead a moment before).
	ExitCode *int
	// Activity is when the window last had output.
	Activity time.Time
	// Command is the command the pane was started with.
	Command string
}

// ReadPane asks tmux about session's first pane. found is false when
// there is no such session (or no server).
func (t Server) ReadPane(ctx context.Context, session string) (Pane, bool, error) {
	// tmux 3.3 answers a missing target with an empty line and status 0,
	// so the answer names the session and is checked.
	out, err := t.command(ctx, "display-message", "-p", "-t", "="+session+":",
		"#{session_name}\t#{pane_pid}\t#{pane_dead}\t#{pane_dead_status}\t#{pane_dead_signal}\t#{window_activity}\t#{pane_start_command}").Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() == 1 {
			return Pane{}, false, nil // no server, or no such session
		}
		return Pane{}, false, fmt.Errorf("asking tmux about %s: %w", session, err)
	}
	f := strings.SplitN(strings.TrimRight(string(out), "\n"), "\t", 7)
	if len(f) != 7 || f[0] != session {
		return Pane{}, false, nil
	}
	f = f[1:]
	var p Pane
	p.PID, _ = strconv.Atoi(f[0])
	p.Dead = f[1] == "1"
	if code, err := strconv.Atoi(f[2]); err == nil && p.Dead {
		p.ExitCode = &code
	} else if sig, err := strconv.Atoi(f[3]); err == nil && p.Dead && sig > 0 {
		code := 128 + sig // killed by a signal, as a shell reports it
		p.ExitCode = &code
	}
	if secs, err := strconv.ParseInt(f[4], 10, 64); err == nil {
		p.Activity = time.Unix(secs, 0)
	}
	p.Command = strings.Trim(f[5], `"`)
	return p, true, nil
}
