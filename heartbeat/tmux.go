package heartbeat

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

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

// ReadPane asks tmux (with the given global arguments, e.g. -L socket)
// about session. found is false when there is no such session.
func ReadPane(ctx context.Context, tmuxArgs []string, session string) (Pane, bool, error) {
	// tmux 3.3 answers a missing target with an empty line and status 0,
	// so the answer names the session and is checked.
	args := append(append([]string{}, tmuxArgs...), "display-message", "-p", "-t", "="+session+":",
		"#{session_name}\t#{pane_pid}\t#{pane_dead}\t#{pane_dead_status}\t#{pane_dead_signal}\t#{window_activity}\t#{pane_start_command}")
	out, err := exec.CommandContext(ctx, "tmux", args...).Output()
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

// diskFree is the space available to unprivileged users on dir's
// filesystem.
func diskFree(dir string) (uint64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return st.Bavail * uint64(st.Bsize), nil
}
