package sandbox

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// Spec is how a sandbox is made and what its sessions get: hostd run's
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
	// Transport is the agent's, gt-agent's --transport: auto (QUIC, then
	// the TCP fallback; the agent's default when empty), quic or tcp.
	Transport string
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
	if s.Transport != "" {
		args = append(args, "-e", "GT_AGENT_TRANSPORT="+s.Transport)
	}
	return append(args, "--entrypoint", s.Agent, s.Image, "up", "--watch-session", SessionName)
}
