package sandbox

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"time"

	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// Spec is how a sandbox is made and its sessions run: hostd run's
// settings.
type Spec struct {
	// Image is the polecat image (gt-agent, the gt/bd shims, git, tmux).
	Image string
	// URL is hostd as the container reaches it, https://<host>:<port>.
	URL string
	// Network is the container's network ("" for the runtime's default).
	Network string
	// Mounts are the runtime's -v arguments, SRC:DST[:OPTS] each.
	Mounts []string
	// CPUs and Memory are the runtime's --cpus and --memory ("" for none).
	CPUs, Memory string
	// PidsLimit is the runtime's --pids-limit (0 for none).
	PidsLimit int
	// Agent is gt-agent's path in the image.
	Agent string
	// BeatInterval is how often the sandbox's agent beats: hostd serve's
	// liveness.beat_interval, so that the two agree (0: the agent's
	// default).
	BeatInterval time.Duration
	// Env are the names of the variables of hostd run's environment
	// (those Gas Town set for the session) passed to each session.
	Env []string
}

// Create creates and starts the container of polecat id's sandbox, the
// token given in GT_AGENT_JOIN (in the runtime's environment, not on its
// command line). A container it created and could not start (a mount
// that is not there, no gt-agent at Agent) it removes; one of that name
// already there fails the create.
func (r CLI) Create(ctx context.Context, s Spec, town string, id wire.Identity, home, token string) error {
	if _, err := r.run(ctx, []string{"GT_AGENT_JOIN=" + token}, s.createArgs(town, id, home)...); err != nil {
		return err
	}
	if err := r.Start(ctx, Name(id)); err != nil {
		rmCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		if rerr := r.Remove(rmCtx, Name(id)); rerr != nil {
			return fmt.Errorf("%w (and removing the container it created: %v)", err, rerr)
		}
		return err
	}
	return nil
}

// createArgs is the argv (after the runtime's name) that creates polecat
// id's sandbox in town, labelled with its directory's home, for Start to
// start: the image's gt-agent up,
// joining with the token given in GT_AGENT_JOIN (in the runtime's
// environment, not on its command line), watching the session the
// sessions start in.
func (s Spec) createArgs(town string, id wire.Identity, home string) []string {
	args := []string{"create", "--init", "--name", Name(id), "--hostname", id.Name,
		"--label", TownLabel + "=" + town, "--label", PolecatLabel + "=" + id.String(), "--label", HomeLabel + "=" + home,
		"-e", "GT_PROXY_URL=" + s.URL, "-e", "GT_AGENT_JOIN", "-e", "GT_AGENT_IDENTITY=" + id.String(),
		"-e", "GT_RIG=" + id.Rig, "-e", "GT_POLECAT=" + id.Name}
	if strings.Contains(s.URL, "//host.docker.internal") {
		args = append(args, "--add-host", "host.docker.internal:host-gateway")
	}
	if s.Network != "" {
		args = append(args, "--network", s.Network)
	}
	for _, m := range s.Mounts {
		args = append(args, "-v", m)
	}
	if s.CPUs != "" {
		args = append(args, "--cpus", s.CPUs)
	}
	if s.Memory != "" {
		args = append(args, "--memory", s.Memory)
	}
	if s.PidsLimit > 0 {
		args = append(args, "--pids-limit", fmt.Sprint(s.PidsLimit))
	}
	if s.BeatInterval > 0 {
		args = append(args, "-e", "GT_AGENT_BEAT_INTERVAL="+s.BeatInterval.String())
	}
	return append(args, "--entrypoint", s.Agent, s.Image, "up", "--watch-session", SessionName)
}

// Session is the runtime running one session of polecat id in its
// sandbox (see sessionArgs), tagged tag for Stop, until it ends; the
// caller shows it (hostd's pane channel) and waits. Its exit status is
// the session's.
func (r CLI) Session(ctx context.Context, s Spec, id wire.Identity, tag string, command []string) (*exec.Cmd, error) {
	return r.Command(ctx, s.sessionArgs(id, tag, command)...)
}

// sessionArgs is the argv (after the runtime's name) that runs one session
// of polecat id in its sandbox, in its clone, with the variables of Env
// passed on by name (their values stay off every command line).
func (s Spec) sessionArgs(id wire.Identity, tag string, command []string) []string {
	args := []string{"exec"}
	for _, name := range s.Env {
		args = append(args, "-e", name)
	}
	args = append(args, Name(id), s.Agent, "session", "start", "--tag", tag, "--dir", WorkDir(id))
	for _, name := range s.Env {
		args = append(args, "--env", name)
	}
	return append(append(args, "--"), containerCommand(command)...)
}

// RigSettings is where the rig's shared Claude settings are in the
// container: the data channel installs <town>/<rig>/polecats/.claude
// under the agent's data root, /work.
const RigSettings = "/work/.claude/settings.json"

// containerCommand is Gas Town's session command as it runs in the
// container: an absolute command path (the host's claude) becomes its
// base name, found on the container's PATH, and Claude's --settings,
// which Gas Town points at the rig's shared settings on the host, points
// at their copy in the container.
func containerCommand(command []string) []string {
	c := append([]string(nil), command...)
	if strings.HasPrefix(c[0], "/") {
		c[0] = c[0][strings.LastIndex(c[0], "/")+1:]
	}
	for i := 1; i < len(c); i++ {
		switch {
		case c[i] == "--":
			return c
		case c[i] == "--settings" && i+1 < len(c) && strings.HasPrefix(c[i+1], "/"):
			c[i+1] = RigSettings
			i++
		case strings.HasPrefix(c[i], "--settings=/"):
			c[i] = "--settings=" + RigSettings
		}
	}
	return c
}

// Stop ends the session Session started with tag in polecat id's
// sandbox, if it still runs; a later session that replaced it (the next
// hostd run, after Gas Town respawned the pane) runs on, and the sandbox
// stays.
func (r CLI) Stop(ctx context.Context, s Spec, id wire.Identity, tag string) error {
	_, err := r.run(ctx, nil, "exec", Name(id), s.Agent, "session", "stop", "--tag", tag)
	return err
}
