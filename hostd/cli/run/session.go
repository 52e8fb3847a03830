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
	"github.com/polecat-sidecar/sidecar/internal/termsafe"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// session runs one session in the sandbox, through its agent, and, on a
// terminal, shows it there through hostd's pane channel (the escape
// filter of hostd attach; keys in, screen out) until it ends; it exits
// with the session's status. A signal ends the session (the sandbox
// stays), as does the session's own end: its tmux session goes.
func (o *runOptions) session(ctx context.Context, rt sandbox.Runtime, id wire.Identity, args []string) error {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGHUP, syscall.SIGTERM, syscall.SIGINT)
	defer signal.Stop(sigs)
	req := wire.SandboxRequest{Op: wire.SandboxSession, Tag: rand.Text(), Command: args, Env: sessionEnv(os.Environ(), o.spec.Env)}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	done := make(chan struct{})
	var code int
	var ended error
	go func() { code, ended = o.runSession(runCtx, rt, id, req); close(done) }()
	go keepLiveness(ctx, done, livenessRecheck)
	shown := make(chan struct{})
	if command.IsTTY(os.Stdin) && command.IsTTY(os.Stdout) {
		go o.show(ctx, id, done, shown)
	} else {
		close(shown)
	}
	select {
	case <-done:
		<-shown
		o.stop(ctx, rt, id, req.Tag) // the session is over for Gas Town whichever way it ended
	case s := <-sigs:
		o.stop(ctx, rt, id, req.Tag)
		cancel()
		<-done
		<-shown
		code, ended = 128+int(s.(syscall.Signal)), nil
	}
	if ended != nil {
		return fmt.Errorf("the session in %s: %s", sandbox.Name(id), termsafe.Line(ended.Error()))
	}
	return exit.Status(code)
}

// runSession starts req's session through id's agent and waits for its end,
// returning its exit status. A stream that breaks (the tunnel
// reconnecting, hostd serve restarting) is followed by another once the
// agent is back: the start again, until the agent has answered it (the
// session tagged so starts once), then a wait for it.
func (o *runOptions) runSession(ctx context.Context, rt sandbox.Runtime, id wire.Identity, req wire.SandboxRequest) (int, error) {
	breaks := 0
	for {
		conn, err := o.connect(ctx, rt, id, 0, io.Discard)
		if err != nil {
			return 0, err
		}
		opened := time.Now()
		x, err := send(ctx, conn, req)
		for err == nil {
			var a wire.SandboxAnswer
			if a, err = x.next(); err != nil {
				break
			}
			switch a.Status {
			case wire.SandboxStarted:
				req = wire.SandboxRequest{Op: wire.SandboxWait, Tag: req.Tag}
				continue
			case wire.SandboxExited:
				x.Close()
				return a.Code, nil
			case wire.SandboxGone:
				err = errors.New("it ended without an exit status (killed from outside)")
			case wire.SandboxReplaced:
				err = errors.New("a later session replaced it")
			default:
				err = fmt.Errorf("the agent answered %q", a.Status)
			}
			x.Close()
			return 0, err
		}
		if x != nil {
			x.Close()
		}
		if _, ok := errors.AsType[*agentError](err); ok || ctx.Err() != nil {
			return 0, err
		}
		if time.Since(opened) > time.Minute {
			breaks = 0 // a wait the tunnel broke, not a stream that cannot work
		}
		if breaks++; breaks >= maxBreaks {
			return 0, fmt.Errorf("the sandbox channel broke %d times in a row: %w", breaks, err)
		}
		if err := sleep(ctx, time.Second); err != nil {
			return 0, err
		}
	}
}

// stop ends id's session tagged tag, if it is still the one running: a
// later session that replaced it (the next hostd run, after Gas Town
// respawned the pane) runs on, and the sandbox stays.
func (o *runOptions) stop(ctx context.Context, rt sandbox.Runtime, id wire.Identity, tag string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
	defer cancel()
	conn, err := o.connect(ctx, rt, id, 0, io.Discard)
	if err == nil {
		var x *exchange
		if x, err = send(ctx, conn, wire.SandboxRequest{Op: wire.SandboxStop, Tag: tag}); err == nil {
			_, err = x.next()
			x.Close()
		}
	}
	if err != nil {
		fmt.Fprintf(command.Stderr, "hostd run: ending the session in %s: %s\n", sandbox.Name(id), termsafe.Line(err.Error()))
	}
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
