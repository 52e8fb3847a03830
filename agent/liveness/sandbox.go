package liveness

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/polecat-sidecar/sidecar/agent/tmux"
	"github.com/polecat-sidecar/sidecar/heartbeat"
)

// A sandbox holds one polecat's sessions one after another: the container
// 'hostd run' keeps for the polecat runs 'gt-agent up --watch-session'
// with no command, and each session Gas Town starts (a first start, a
// handoff, a respawn) is started in it with StartSession, waited for with
// WaitSession and, when Gas Town ends it, ended with StopSession. The
// container's files (uncommitted work, the branch) outlive every session.

// SessionSpec is one session for StartSession.
type SessionSpec struct {
	// Name is the tmux session, the one the agent watches.
	Name string
	// Command is what runs in it.
	Command []string
	// Dir is the command's working directory ("" for the tmux server's).
	Dir string
	// Env is the session's Gas Town variables (NAME=value each): set in
	// the tmux session's environment, for its command and every process
	// started in it later, in place of what the session before had; never
	// on the pane's command line, which the beats show.
	Env []string
	// Tag names this session for StopSession: whoever started it ends it
	// and not a later one that replaced it ("" for none).
	Tag string
}

// tagOption is the tmux session option holding the running session's Tag.
const tagOption = "@gt-agent-session-tag"

// envOption is the tmux session option naming the variables of the
// running session's Env, so that the next session drops those it has not.
const envOption = "@gt-agent-session-env"

// validEnvName says whether name can name a variable of a session's Env:
// a letter or '_', then letters, digits and '_'.
func validEnvName(name string) bool {
	for i, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '_' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return name != ""
}

// validTag says whether tag can name a session: letters, digits, '-' and
// '_' (it goes into a tmux format), at most 64 of them.
func validTag(tag string) bool {
	if len(tag) > 64 {
		return false
	}
	for _, r := range tag {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}

// StartSession starts spec's command in its tmux session under 'gt-agent
// session-run' (which records its exit status), in a new session or, when
// the session exists, in place of whatever runs there: a session Gas Town
// starts replaces the one before, its environment too. A session already
// tagged spec.Tag (a start asked for again) is left as it is.
func StartSession(ctx context.Context, srv tmux.Server, spec SessionSpec) error {
	if !validTag(spec.Tag) {
		return fmt.Errorf("session tag %q: use at most 64 letters, digits, '-' and '_'", spec.Tag)
	}
	names := make([]string, 0, len(spec.Env))
	for _, kv := range spec.Env {
		name, _, ok := strings.Cut(kv, "=")
		if !ok || !validEnvName(name) {
			return fmt.Errorf("session variable %q: want NAME=value, the name of letters, digits and '_'", kv)
		}
		names = append(names, name)
	}
	_, found, err := srv.ReadPane(ctx, spec.Name)
	if err != nil {
		return err
	}
	if found && spec.Tag != "" {
		if tag, err := srv.Option(ctx, spec.Name, tagOption); err != nil || tag == spec.Tag {
			return err
		}
	}
	argv, opts, _, err := wrap(spec.Name, spec.Command)
	if err != nil {
		return err
	}
	opts[tagOption], opts[envOption] = spec.Tag, strings.Join(names, " ")
	if spec.Dir != "" {
		argv = append(argv[:2:2], append([]string{"--dir", spec.Dir}, argv[2:]...)...)
	}
	sp := tmux.Spawn{Argv: argv, Options: opts, Env: spec.Env}
	if !found {
		// No status line: the session is shown inside Gas Town's own tmux
		// pane, which has one.
		opts["status"] = "off"
		if err = srv.NewSession(ctx, spec.Name, sp); err == nil {
			err = srv.KeepRunning(ctx)
		}
		return err
	}
	before, err := srv.Option(ctx, spec.Name, envOption)
	if err != nil {
		return err
	}
	for _, name := range strings.Fields(before) {
		if !slices.Contains(names, name) {
			sp.Unset = append(sp.Unset, name)
		}
	}
	old, err := srv.Option(ctx, spec.Name, statusOption)
	if err == nil {
		err = srv.Respawn(ctx, spec.Name, sp)
	}
	if err == nil && old != "" {
		_ = os.Remove(old) // the replaced command's, unless it is still ending
	}
	return err
}

// StopSession ends session name (its processes get SIGHUP) when tag is ""
// or the session's Tag: a session that a later StartSession replaced is
// left running, and stopped is false. The check and the end are one tmux
// command, so a replacement cannot slip in between. No such session is not
// an error.
func StopSession(ctx context.Context, srv tmux.Server, name, tag string) (stopped bool, err error) {
	if !validTag(tag) {
		return false, fmt.Errorf("session tag %q: use at most 64 letters, digits, '-' and '_'", tag)
	}
	if tag == "" {
		_, found, err := srv.ReadPane(ctx, name)
		if err != nil || !found {
			return false, err
		}
		return true, srv.Kill(ctx, name)
	}
	return srv.KillIf(ctx, name, tagOption, tag)
}

// ErrSessionGone is WaitSession's answer when the session went away (tmux
// killed it, or its server) before its command's status was recorded.
var ErrSessionGone = errors.New("the session ended without an exit status (killed from outside)")

// ErrSessionReplaced is WaitSession's answer when a later StartSession,
// with another tag, replaced the session waited for.
var ErrSessionReplaced = errors.New("a later session replaced it")

// WaitSession waits, polling every poll, until the command in session
// name has exited, and returns its exit status: as its wrapper recorded
// it, else from tmux. With a tag, the session must be the one StartSession
// started with that tag: one no longer tagged so was replaced.
func WaitSession(ctx context.Context, srv tmux.Server, name, tag string, poll time.Duration) (int, error) {
	t := time.NewTicker(poll)
	defer t.Stop()
	status := ""
	for {
		p, found, err := srv.ReadPane(ctx, name)
		if err == nil && found && status == "" {
			status, err = srv.Option(ctx, name, statusOption)
		}
		if err == nil && found && tag != "" {
			var now string
			if now, err = srv.Option(ctx, name, tagOption); err == nil && now != tag {
				// Replaced, unless it went between the two reads.
				if _, found, err = srv.ReadPane(ctx, name); err == nil && found {
					return 0, ErrSessionReplaced
				}
			}
		}
		switch {
		case err != nil:
			return 0, err
		case !found:
			if code, ok := readStatus(status); ok {
				return code, nil
			}
			return 0, ErrSessionGone
		case p.Dead:
			if code, ok := readStatus(status); ok {
				return code, nil
			}
			if p.ExitCode != nil {
				return *p.ExitCode, nil
			}
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-t.C:
		}
	}
}

// wrap is the command line run in session name, under 'gt-agent
// session-run' which records the exit status, the session options that
// say where and what the command is (for the beats: the pane's own
// command is the wrapper; cut as they cut it: tmux takes at most 16 KiB
// of arguments in one call), and that place: a file of each start's own,
// as a replaced command records its status after its successor started.
// starts numbers this process's starts, for their status files.
var starts atomic.Int64

func wrap(name string, command []string) (argv []string, opts map[string]string, status string, err error) {
	self, err := os.Executable()
	if err != nil {
		return nil, nil, "", fmt.Errorf("finding gt-agent's own binary: %w", err)
	}
	status = filepath.Join(os.TempDir(), fmt.Sprintf("gt-agent-%d-%s-%d.status", os.Getpid(), name, starts.Add(1)))
	_ = os.Remove(status)
	argv = append([]string{self, "session-run", "--status-file", status, "--"}, command...)
	return argv, map[string]string{statusOption: status, commandOption: clip(strings.Join(command, " "), heartbeat.MaxCommand)}, status, nil
}
