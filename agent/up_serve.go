//go:build linux

package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"strconv"
	"time"

	"github.com/polecat-sidecar/sidecar/agent/creds"
	"github.com/polecat-sidecar/sidecar/agent/data"
	"github.com/polecat-sidecar/sidecar/agent/git"
	"github.com/polecat-sidecar/sidecar/agent/liveness"
	"github.com/polecat-sidecar/sidecar/agent/nudge"
	"github.com/polecat-sidecar/sidecar/agent/pane"
	"github.com/polecat-sidecar/sidecar/agent/relay"
	"github.com/polecat-sidecar/sidecar/agent/sandbox"
	"github.com/polecat-sidecar/sidecar/agent/supervisor"
	"github.com/polecat-sidecar/sidecar/internal/cli"
	"github.com/polecat-sidecar/sidecar/internal/parts"
	"github.com/polecat-sidecar/sidecar/internal/unixsock"
	"github.com/polecat-sidecar/sidecar/tunnel"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// newSupervisor is the supervisor that holds the tunnel to hostd with
// store's certificate; hostOpened takes the streams hostd opens.
func (c *upRun) newSupervisor(store *creds.Store, hostOpened *tunnel.ServeMux) (*supervisor.Supervisor, error) {
	scfg := c.Supervisor
	scfg.Addr, scfg.ServerName, scfg.Creds, scfg.Logger = c.addr, c.serverName, store, slog.Default()
	scfg.Handler = hostOpened
	return supervisor.New(scfg)
}

// startData runs the data channel as a part of p: it answers hostd's
// transfers and uploads the data root at each checkpoint.
func (c *upRun) startData(p *parts.Group, sup *supervisor.Supervisor, hostOpened *tunnel.ServeMux) (*data.Service, error) {
	dcfg := c.Data
	dcfg.StateDir, dcfg.Logger = c.StateDir, slog.Default()
	if dcfg.Root == "" {
		dcfg.Root = c.Watch.WorkDir
	}
	dsvc, err := data.New(dcfg, sup)
	if err != nil {
		return nil, err
	}
	hostOpened.Handle(wire.KindSync, dsvc)
	p.Go("data checkpoints", parts.UntilDone(dsvc.Run))
	return dsvc, nil
}

// serveRelay relays the gt/bd shims' commands from --socket to hostd, as
// a part of p.
func (c *upRun) serveRelay(p *parts.Group, sup *supervisor.Supervisor) error {
	socket := c.Socket
	relayLn, err := unixsock.Listen(socket)
	if errors.Is(err, unixsock.ErrInUse) {
		return fmt.Errorf("another gt-agent already serves %s", socket)
	}
	if err != nil {
		return fmt.Errorf("gt/bd relay socket: %w", err)
	}
	p.Go("gt/bd relay", func(ctx context.Context) error {
		defer relayLn.Close()
		return relay.NewForwarder(sup, c.RelayWait, slog.Default()).Serve(ctx, relayLn)
	})
	slog.Info("relaying gt/bd", "socket", socket)
	return nil
}

// serveGit serves the rig's repository to git on --git-listen, as a part
// of p, and returns where git in the container reaches it; nothing when
// that is empty.
func (c *upRun) serveGit(p *parts.Group, sup *supervisor.Supervisor) (string, error) {
	addr := c.GitListen
	if addr == "" {
		return "", nil
	}
	admit, err := gitAdmit(c.GitAllowUIDs)
	if err != nil {
		return "", err
	}
	gitLn, err := net.Listen("tcp", addr)
	if err != nil {
		return "", fmt.Errorf("git listener: %w", err)
	}
	fw := git.NewForwarder(sup, c.RelayWait, slog.Default())
	fw.Admit = admit
	p.Go("git port", func(ctx context.Context) error {
		defer gitLn.Close()
		return fw.Serve(ctx, gitLn)
	})
	local := gitLn.Addr().(*net.TCPAddr)
	if local.IP.IsUnspecified() {
		local = &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: local.Port}
	}
	slog.Info("serving git", "origin", git.Origin(local.String(), "<rig>"))
	return local.String(), nil
}

// serveSandbox serves hostd run's operations in a sandbox (gt-agent up
// --watch-session): the clone, through the git port at gitAddr, and the
// sessions in the watched session.
func (c *upRun) serveSandbox(mux *tunnel.ServeMux, gitAddr string) error {
	if c.Watch.WatchSession == "" {
		return nil // the session is the agent's own, or a process: not a sandbox
	}
	scfg := sandbox.Config{WorkDir: c.Watch.WorkDir, DataRoot: c.Data.Root, GitAddr: gitAddr,
		Session: c.Watch.WatchSession, Logger: slog.Default()}
	if c.TmuxSocket != "" {
		scfg.Tmux.Args = []string{"-S", c.TmuxSocket}
	}
	svc, err := sandbox.New(scfg)
	if err != nil {
		return err
	}
	mux.Handle(wire.KindSandbox, svc)
	return nil
}

// gitAdmit turns --git-allow-uid into the git port's admission check; nil
// for "any".
func gitAdmit(list []string) (func(net.Conn) error, error) {
	var uids []int
	for _, v := range list {
		if v == "any" {
			return nil, nil
		}
		uid, err := strconv.Atoi(v)
		if err != nil || uid < 0 {
			return nil, fmt.Errorf("--git-allow-uid %q: want a uid, or \"any\"", v)
		}
		uids = append(uids, uid)
	}
	return git.OnlyUIDs(uids...), nil
}

// watch starts watching the polecat's session (starting it when given
// its command), serves nudges and the pane on it, and sends hostd beats
// as a part of p.
func (c *upRun) watch(ctx context.Context, p *parts.Group, sup *supervisor.Supervisor, hostOpened *tunnel.ServeMux) (*liveness.Watcher, error) {
	wcfg := c.Watch
	wcfg.Command, wcfg.Logger = c.command, slog.Default()
	wcfg.StartedMark = filepath.Join(c.StateDir, "session-started")
	if c.TmuxSocket != "" {
		wcfg.TmuxArgs = []string{"-S", c.TmuxSocket}
	}
	watcher, err := liveness.Start(ctx, wcfg)
	if err != nil {
		return nil, err
	}
	if c.watchers() == 0 {
		slog.Warn("no session to watch: beats will say so and hostd will show this polecat as dead; pass -- CMD, --watch-session or --watch-process")
	}
	if err := serveNudges(p, c.upConfig, hostOpened); err != nil {
		return nil, err
	}
	beats := &liveness.Sender{Watcher: watcher, Sessions: sup, Interval: c.BeatInterval, Version: cli.Version(), Logger: slog.Default()}
	p.Go("beats", parts.UntilDone(beats.Run))
	return watcher, nil
}

// stopIfRefused ends the session the agent started (see
// liveness.Watcher.StopStarted) when hostd has refused the agent for good
// (err, from the supervisor, is a refused *supervisor.FatalError): its
// command could no longer run gt, bd or git, nor be nudged or watched.
// Another end leaves the session to the next agent, which adopts it.
func stopIfRefused(watcher *liveness.Watcher, err error) {
	if fatal, ok := errors.AsType[*supervisor.FatalError](err); !ok || !fatal.Refused {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	name, stopErr := watcher.StopStarted(ctx)
	switch {
	case stopErr != nil:
		slog.Error("hostd refused this agent for good, and stopping the polecat's session failed: stop it by hand", "err", stopErr)
	case name != "":
		slog.Warn("hostd refused this agent for good: stopped the polecat's session it started, whose command could no longer reach the host", "tmux_session", name)
	}
}

// serveNudges delivers hostd's nudges into the watched session's pane,
// hears Claude Code's hooks on the hook socket (a part of p), and serves
// hostd peek and attach on that pane.
func serveNudges(p *parts.Group, c *upConfig, mux *tunnel.ServeMux) error {
	socket := orDefault(c.HookSocket, nudge.HookSocketPath(c.Socket))
	hooks := &nudge.Hooks{}
	if ln, err := unixsock.Listen(socket); err != nil {
		slog.Warn("no hook socket: Claude Code's hooks cannot reach the agent, so nudges judge idle from the screen", "socket", socket, "err", err)
	} else {
		p.Go("hook socket", func(ctx context.Context) error {
			defer ln.Close()
			if err := hooks.Serve(ctx, ln); err != nil {
				slog.Warn("hook socket stopped; nudges fall back to the screen", "err", err)
			}
			return nil // the agent goes on without it
		})
	}
	ncfg := c.Nudge
	ncfg.Session = orDefault(c.Watch.WatchSession, c.Watch.Name)
	ncfg.StateDir, ncfg.Logger = c.StateDir, slog.Default()
	if c.TmuxSocket != "" {
		ncfg.Tmux.Args = []string{"-S", c.TmuxSocket}
	}
	svc, err := nudge.New(ncfg, hooks)
	if err != nil {
		return err
	}
	panes, err := pane.New(pane.Config{Session: ncfg.Session, Tmux: ncfg.Tmux, Logger: slog.Default()})
	if err != nil {
		return err
	}
	mux.Handle(wire.KindNudge, svc)
	mux.Handle(wire.KindPane, panes)
	return nil
}
