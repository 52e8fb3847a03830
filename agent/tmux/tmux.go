// Package tmux is every tmux operation gt-agent does: starting the
// polecat's session, reading its pane for beats, pasting nudges and
// pressing Enter, capturing the screen for nudges and peek, and attaching
// a client on a terminal of its own for hostd attach (attach.go).
package tmux

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
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

// command is a tmux invocation with the server's global arguments, in a
// UTF-8 locale (see utf8Env).
func (t Server) command(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "tmux", append(append([]string{}, t.Args...), args...)...)
	cmd.Env = utf8Env(os.Environ())
	return cmd
}

// utf8Env is env with LC_CTYPE=C.UTF-8 when its character type (LC_ALL,
// else LC_CTYPE, else LANG) is not UTF-8; a LC_ALL that is not goes, since
// it would override LC_CTYPE. Without a UTF-8 locale (a container that sets
// none), tmux makes the tabs in a format's output '_' and pastes non-ASCII
// text as '_'; the server started from this environment passes it on to
// the session.
func utf8Env(env []string) []string {
	get := func(k string) string {
		for _, kv := range env {
			if v, ok := strings.CutPrefix(kv, k+"="); ok {
				return v
			}
		}
		return ""
	}
	ctype := cmp.Or(get("LC_ALL"), get("LC_CTYPE"), get("LANG"))
	if u := strings.ToLower(ctype); strings.Contains(u, "utf-8") || strings.Contains(u, "utf8") {
		return env
	}
	out := slices.DeleteFunc(slices.Clone(env), func(kv string) bool {
		return strings.HasPrefix(kv, "LC_ALL=") || strings.HasPrefix(kv, "LC_CTYPE=")
	})
	return append(out, "LC_CTYPE=C.UTF-8")
}

// Spawn is what a pane is started with.
type Spawn struct {
	// Argv is the command line the pane runs.
	Argv []string
	// Options are user options (names starting with '@') set on the
	// session: before the command starts, when respawned.
	Options map[string]string
	// Env are NAME=value pairs set in the session's environment before the
	// command starts: the command has them, and so has every process
	// started in the session later (a new pane; 'tmux show-environment'
	// shows them). Each NAME also leaves the server's global environment,
	// where tmux put the environment of whoever started the server (for a
	// sandbox, its first session's values).
	Env []string
	// Unset are names removed from the session's environment, for its
	// command and every process started in it later (Respawn only: what
	// the command before had and this one must not).
	Unset []string
}

// arg is s as a tmux command line argument: tmux takes an argument
// ending in ';' as the end of a command (and one ending in "\;" as one
// ending in ';'), so that final ';' is escaped; nothing else in an
// argument is special. Every argument from outside (a command line, a
// variable's value, an option's) goes through it.
func arg(s string) string {
	if strings.HasSuffix(s, ";") {
		return s[:len(s)-1] + `\;`
	}
	return s
}

// args is each of ss as a tmux argument (see arg).
func args(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = arg(s)
	}
	return out
}

// unsetGlobal is the tmux commands that remove each variable of env
// (NAME=value) from the server's global environment, each followed by a
// command separator.
func unsetGlobal(env []string) []string {
	var cmds []string
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		cmds = append(cmds, "set-environment", "-g", "-u", "--", name, ";")
	}
	return cmds
}

// setOptions is the tmux commands that set the user options opts on
// session name, each followed by a command separator.
func setOptions(name string, opts map[string]string) []string {
	var cmds []string
	for k, v := range opts {
		cmds = append(cmds, "set-option", "-t", "="+name+":", k, arg(v), ";")
	}
	return cmds
}

// NewSession starts sp in a new detached session called name (200x50).
// remain-on-exit is set first, in the same call, so that a command that
// exits at once still leaves its dead pane (and its status) for the beats.
func (t Server) NewSession(ctx context.Context, name string, sp Spawn) error {
	cmds := append([]string{"start-server", ";", "set-option", "-g", "remain-on-exit", "on", ";"}, unsetGlobal(sp.Env)...)
	cmds = append(cmds, "new-session", "-d", "-s", name, "-x", "200", "-y", "50")
	for _, kv := range sp.Env {
		cmds = append(cmds, "-e", arg(kv))
	}
	cmds = append(append(append(cmds, "--"), args(sp.Argv)...), ";")
	cmds = append(cmds, setOptions(name, sp.Options)...)
	if out, err := t.command(ctx, cmds[:len(cmds)-1]...).CombinedOutput(); err != nil {
		return fmt.Errorf("starting tmux session %q: %v: %s", name, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// Respawn replaces the process of session name's first pane (a dead one:
// the pane keeps its place, its history and anyone attached) with sp, its
// options and environment set first, in the same call.
func (t Server) Respawn(ctx context.Context, name string, sp Spawn) error {
	target := "=" + name + ":"
	cmds := unsetGlobal(sp.Env)
	for _, n := range sp.Unset {
		cmds = append(cmds, "set-environment", "-t", target, "-r", "--", n, ";")
	}
	for _, kv := range sp.Env {
		n, v, _ := strings.Cut(kv, "=")
		cmds = append(cmds, "set-environment", "-t", target, "--", n, arg(v), ";")
	}
	cmds = append(cmds, setOptions(name, sp.Options)...)
	cmds = append(append(cmds, "respawn-pane", "-k", "-t", target, "--"), args(sp.Argv)...)
	if out, err := t.command(ctx, cmds...).CombinedOutput(); err != nil {
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

// Paste types text into session's pane through a tmux buffer of its own
// (load-buffer from stdin, then paste-buffer -d), never as send-keys
// arguments or through a shell, so ';', a leading '-', quotes and $(...)
// arrive as they are. -p brackets the paste only if the application asked
// for bracketed paste; -r keeps newlines as they are (tmux would make
// them carriage returns). The text must already be clean of control
// characters (no escape can end a bracketed paste early).
func (t Server) Paste(ctx context.Context, session, buffer, text string) error {
	// One tmux call: load, then paste (and delete) the buffer.
	paste := t.command(ctx, "load-buffer", "-b", buffer, "-", ";", "paste-buffer", "-p", "-r", "-d", "-b", buffer, "-t", "="+session+":")
	paste.Stdin = strings.NewReader(text)
	if out, err := paste.CombinedOutput(); err != nil {
		_ = t.command(ctx, "delete-buffer", "-b", buffer).Run()
		return fmt.Errorf("pasting into %q: %v: %s", session, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// Enter presses Enter in session's pane.
func (t Server) Enter(ctx context.Context, session string) error {
	if out, err := t.command(ctx, "send-keys", "-t", "="+session+":", "Enter").CombinedOutput(); err != nil {
		return fmt.Errorf("pressing Enter in %q: %v: %s", session, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// Screen is what a pane shows.
type Screen struct {
	// Lines are the visible lines, trailing spaces removed.
	Lines []string
	// CursorX and CursorY are the cursor's column and line.
	CursorX, CursorY int
	// Activity is when the window last had output.
	Activity time.Time
}

// CursorLine is the line the cursor is on: where input is typed.
func (s Screen) CursorLine() string {
	if s.CursorY < 0 || s.CursorY >= len(s.Lines) {
		return ""
	}
	return s.Lines[s.CursorY]
}

// Capture reads session's visible pane and its cursor in one call.
func (t Server) Capture(ctx context.Context, session string) (Screen, error) {
	target := "=" + session + ":"
	out, err := t.command(ctx, "display-message", "-p", "-t", target, "#{cursor_x}\t#{cursor_y}\t#{window_activity}", ";",
		"capture-pane", "-p", "-t", target).Output()
	if err != nil {
		return Screen{}, fmt.Errorf("capturing %q: %w", session, err)
	}
	head, body, _ := strings.Cut(string(out), "\n")
	f := strings.Split(head, "\t")
	if len(f) != 3 {
		return Screen{}, fmt.Errorf("capturing %q: tmux said %q", session, head)
	}
	var s Screen
	s.CursorX, _ = strconv.Atoi(f[0])
	s.CursorY, _ = strconv.Atoi(f[1])
	if secs, err := strconv.ParseInt(f[2], 10, 64); err == nil {
		s.Activity = time.Unix(secs, 0)
	}
	for _, l := range strings.Split(strings.TrimSuffix(body, "\n"), "\n") {
		s.Lines = append(s.Lines, strings.TrimRight(l, " "))
	}
	return s, nil
}

// History is the last lines of session's pane, scrollback included,
// wrapped lines joined (capture-pane -J), for peek.
func (t Server) History(ctx context.Context, session string, lines int) (string, error) {
	out, err := t.command(ctx, "capture-pane", "-p", "-J", "-S", strconv.Itoa(-lines), "-t", "="+session+":").Output()
	if err != nil {
		return "", fmt.Errorf("capturing %q: %w", session, err)
	}
	return string(out), nil
}

// KeepRunning makes the server stay up with no session left (exit-empty
// off), so that a sandbox's sessions, one after another, all live on the
// same server and nothing starts a second one between them.
func (t Server) KeepRunning(ctx context.Context) error {
	if out, err := t.command(ctx, "set-option", "-g", "exit-empty", "off").CombinedOutput(); err != nil {
		return fmt.Errorf("keeping the tmux server up between sessions: %v: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

// KillIf ends session like Kill when its user option opt is value, in one
// tmux command (no other command runs between the check and the end);
// killed is false when the session is not there or opt differs. value
// must not hold tmux format syntax ('#', '{', '}', ',').
func (t Server) KillIf(ctx context.Context, session, opt, value string) (killed bool, err error) {
	if _, found, err := t.ReadPane(ctx, session); err != nil || !found {
		return false, err
	}
	target := "=" + session + ":"
	out, err := t.command(ctx, "if-shell", "-F", "-t", target, "#{==:#{"+opt+"},"+value+"}",
		"kill-session -t '="+session+"'", "display-message -p -t '"+target+"' kept").Output()
	if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() == 1 {
		return false, nil // gone since
	}
	if err != nil {
		return false, fmt.Errorf("ending tmux session %q: %w", session, err)
	}
	return strings.TrimSpace(string(out)) != "kept", nil
}

// Kill ends session and the processes in its panes (SIGHUP); no such
// session is not an error.
func (t Server) Kill(ctx context.Context, session string) error {
	if _, found, err := t.ReadPane(ctx, session); err != nil || !found {
		return err
	}
	if out, err := t.command(ctx, "kill-session", "-t", "="+session).CombinedOutput(); err != nil {
		return fmt.Errorf("ending tmux session %q: %v: %s", session, err, strings.TrimSpace(string(out)))
	}
	return nil
}
