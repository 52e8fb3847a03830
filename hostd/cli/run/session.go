package run

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/polecat-sidecar/sidecar/hostd/cli/command"
	"github.com/polecat-sidecar/sidecar/hostd/sandbox"
	"github.com/polecat-sidecar/sidecar/internal/exit"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// session runs one session in the sandbox and, on a terminal, shows it
// there through hostd's pane channel (the escape filter of hostd attach;
// keys in, screen out) until it ends; it exits with the session's status.
// A signal ends the session (the sandbox stays).
func (o *runOptions) session(ctx context.Context, rt sandbox.CLI, id wire.Identity, args []string) error {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGHUP, syscall.SIGTERM, syscall.SIGINT)
	defer signal.Stop(sigs)
	tag := rand.Text()
	c, err := rt.Session(context.WithoutCancel(ctx), o.spec, id, tag, args)
	if err != nil {
		return err
	}
	errb := &sandbox.Capped{Max: 4 << 10} // from the container: the polecat's to choose
	c.Stdout, c.Stderr = io.Discard, errb
	if err := c.Start(); err != nil {
		return fmt.Errorf("starting the session in %s: %w", sandbox.Name(id), err)
	}
	done := make(chan struct{})
	var exited error
	go func() { exited = c.Wait(); close(done) }()
	go keepLiveness(ctx, done, livenessRecheck)
	shown := make(chan struct{})
	if command.IsTTY(os.Stdin) && command.IsTTY(os.Stdout) {
		go o.show(ctx, id, done, shown)
	} else {
		close(shown)
	}
	code := 0
	select {
	case <-done:
		code = c.ProcessState.ExitCode()
	case s := <-sigs:
		_ = c.Process.Kill()
		<-done
		code, exited = 128+int(s.(syscall.Signal)), nil
	}
	<-shown
	// The session is over for Gas Town whichever way it ended.
	stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
	defer cancel()
	if err := rt.Stop(stopCtx, o.spec, id, tag); err != nil {
		fmt.Fprintf(command.Stderr, "hostd run: ending the session in %s: %v\n", sandbox.Name(id), err)
	}
	var ee *exec.ExitError
	if exited != nil && !errors.As(exited, &ee) {
		return fmt.Errorf("running the session in %s: %w", sandbox.Name(id), exited)
	}
	if code != 0 && errb.Len() > 0 {
		fmt.Fprintf(command.Stderr, "hostd run: %s", errb.String()) // from the container: escaped
	}
	return exit.Status(code)
}

// show attaches this terminal to id's session, read-write, until done
// closes: again whenever the attach ends first (the session not started
// yet, a detach, the tunnel reconnecting). It closes shown when the
// terminal is back as it was.
func (o *runOptions) show(ctx context.Context, id wire.Identity, done <-chan struct{}, shown chan<- struct{}) {
	defer close(shown)
	ao := &attachOptions{App: o.App, rw: true}
	for {
		_ = ao.attach(ctx, id, done)
		select {
		case <-done:
			return
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// livenessRecheck is how often hostd run checks that hostd is still in
// its tmux session's GT_PROCESS_NAMES.
const livenessRecheck = 2 * time.Second

// keepLiveness marks the session again (markLiveness) every interval
// until done closes: Gas Town sets GT_PROCESS_NAMES itself right after it
// creates a session (SessionManager.Start), and when the sandbox is
// already there (gt session restart, a handoff, a respawn) hostd run gets
// to it first, so Gas Town's value, without hostd, would stay and its
// liveness check would call the session a zombie.
func keepLiveness(ctx context.Context, done <-chan struct{}, interval time.Duration) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-done:
			return
		case <-tick.C:
			_ = markLiveness(ctx)
		}
	}
}

// markLiveness adds hostd to GT_PROCESS_NAMES of the tmux session this
// runs in, which Gas Town reads to tell a live agent's pane from a
// zombie's: the pane's process is hostd run, not claude. Outside tmux it
// does nothing.
func markLiveness(ctx context.Context) error {
	pane := os.Getenv("TMUX_PANE")
	if os.Getenv("TMUX") == "" || pane == "" {
		return nil
	}
	out, _ := exec.CommandContext(ctx, "tmux", "show-environment", "-t", pane, "GT_PROCESS_NAMES").Output()
	names := strings.TrimPrefix(strings.TrimSpace(string(out)), "GT_PROCESS_NAMES=")
	if strings.HasPrefix(names, "-") {
		names = ""
	}
	list := strings.FieldsFunc(names, func(r rune) bool { return r == ',' })
	if slices.Contains(list, "hostd") {
		return nil
	}
	if len(list) == 0 {
		list = []string{"claude", "node"} // Gas Town's defaults for Claude
	}
	list = append(list, "hostd")
	if out, err := exec.CommandContext(ctx, "tmux", "set-environment", "-t", pane, "GT_PROCESS_NAMES", strings.Join(list, ",")).CombinedOutput(); err != nil {
		return fmt.Errorf("tmux set-environment GT_PROCESS_NAMES: %v: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}
