// Package run holds hostd run, Gas Town's exec wrapper, which runs a
// polecat's session in its sandbox and shows it on the terminal, and the
// commands it shares code with: hostd attach, which it shows the session
// through, and hostd nuke, which it removes an earlier polecat's sandbox
// with.
package run

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/polecat-sidecar/sidecar/hostd/cli/command"
	"github.com/polecat-sidecar/sidecar/hostd/sandbox"
	"github.com/polecat-sidecar/sidecar/hostd/sandbox/kube"
	"github.com/polecat-sidecar/sidecar/hostd/sandbox/runtimes"
	"github.com/polecat-sidecar/sidecar/hostd/state"
	"github.com/polecat-sidecar/sidecar/internal/settings"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// runOptions are hostd run's settings.
type runOptions struct {
	*command.App
	rt    runtimes.Config // sandbox.runtime and sandbox.kubernetes.*
	spec  sandbox.Spec
	table []settings.Setting // runSettings of the fields above
}

// runSettings is every setting of hostd run (and its key under sandbox.
// in config.yaml, shared with hostd nuke and serve's reaper).
func runSettings(o *runOptions) []settings.Setting {
	return append([]settings.Setting{
		{Key: "sandbox.image", Flag: "image", Usage: "the polecat image (required), among the runtime's local images: hostd run does not pull", Value: &o.spec.Image},
		{Key: "sandbox.url", Flag: "url", Usage: "hostd's URL from inside the container (default https://host.docker.internal:<listen port>; kubernetes: required, hostd's IP address as the pods reach it)", Value: &o.spec.URL},
		{Key: "sandbox.network", Flag: "network", Usage: "the container's network (default: the runtime's)", Value: &o.spec.Network},
		{Key: "sandbox.mounts", Flag: "mount", Usage: "a volume for the container, SRC:DST[:ro] as the runtime's -v (repeatable)", Value: &o.spec.Mounts},
		{Key: "sandbox.cpus", Flag: "cpus", Usage: "the container's CPU limit, as the runtime's --cpus", Value: &o.spec.CPUs},
		{Key: "sandbox.memory", Flag: "memory", Usage: "the container's memory limit, as the runtime's --memory", Value: &o.spec.Memory},
		{Key: "sandbox.pids_limit", Flag: "pids-limit", Usage: "the container's process limit (0: none)", Value: &o.spec.PidsLimit},
		{Key: "sandbox.env", Flag: "env", Usage: "also pass this variable to the session (repeatable; GT_*, BD_*, BEADS_*, CLAUDE*, ANTHROPIC_* always are)", Value: &o.spec.Env},
		{Key: "sandbox.agent", Flag: "agent", Usage: "gt-agent's path in the image", Value: &o.spec.Agent},
		{Key: "sandbox.transport", Flag: "transport", Usage: "the sandbox's agent's transport: auto (QUIC, falling back to TCP), quic or tcp (tcp: bulk at the link's rate where the link loses packets and TCP runs bbr; docs/benchmarks.md)", Value: &o.spec.Transport},
	}, runtimes.Settings(&o.rt, "runtime")...)
}

// NewRunCmd is hostd run.
func NewRunCmd(a *command.App) *cobra.Command {
	o := &runOptions{App: a, rt: runtimes.DefaultConfig(), spec: sandbox.Spec{Agent: "/usr/local/bin/gt-agent"}}
	o.table = runSettings(o)
	cmd := &cobra.Command{
		Use:   "run [flags] -- CMD ARGS...",
		Short: "Run a polecat's session in its container: Gas Town's runtime.exec_wrapper",
		Long: `Run one session of the polecat named by $GT_RIG and $GT_POLECAT (Gas Town
sets both) in the polecat's sandbox, a container that outlives its sessions,
and show it on this terminal: keys in, screen out. Gas Town's exec wrapper:

  <town>/<rig>/settings/config.json: {"runtime": {"exec_wrapper": ["hostd", "run", "--"]}}

(when the rig names an agent, give its command in the same runtime: Gas Town
takes a rig's runtime over its agent; docs/migrating.md)

with the image and other settings in <town>/.runtime/hostd/config.yaml
(sandbox.image, ...). Gas Town's tmux pane then runs hostd run, so gt nudge
and gt peek reach the container's session, and hostd adds itself to the
pane session's GT_PROCESS_NAMES so Gas Town's liveness sees it.

The first session makes the sandbox: a one-time join token, gt-agent up in
the container (watching the session), and a clone of the rig on the
polecat's branch (the one Gas Town checked out in its worktree) in /work/<rig>.
The runtime only makes, starts, inspects and removes the container; the
clone, the git identity and each session are asked of its agent over the
polecat's own tunnel, through hostd serve (no docker exec). Until the agent
has connected, a line every 5 s says hostd run waits, with the runtime's
reason when it gives one; a container that stops first, or a reason that
stays 20 s, fails the start. A session outlives its stream: when the
tunnel reconnects or hostd serve restarts, hostd run waits for it again.
Every later session (gt session restart, a respawn, the polecat's own gt
handoff --cycle: hostd serve respawns the pane hostd run records in
<town>/.runtime/hostd/panes) starts in the same container,
with its files, uncommitted work and branch as they were, replacing the
session before. When Gas Town has given the polecat a new branch in its
worktree (a reused polecat: gt done, then gt sling of the next bead), the
clone is brought to it first: the branch fetched through the tunnel,
uncommitted work kept in a stash (the pane says which), and the session
refused when the branch cannot be checked out. The command runs with the variables Gas Town set (GT_*,
BD_*, BEADS_*, CLAUDE*, ANTHROPIC_*, and --env); an absolute command path
(the host's claude) is looked up on the container's PATH by its name. The
clone's git identity is the one a host polecat's commits get: Gas Town's
GIT_AUTHOR_NAME (the polecat's name) and the host's user.email.

Before it makes or starts anything, hostd run checks that hostd serve
answers on the town's control socket, that the runtime's CLI is installed
and its engine answers, and, for a sandbox not made yet, that the image is
among the runtime's local images (hostd run does not pull). A start that
fails, there or later (an agent that does not connect, a clone that
fails), prints one line saying
what to do, exits with status 1, removes the sandbox it made, if any, and
is reported to hostd serve, which logs it and shows it in 'hostd status'
until the polecat's next start succeeds; with serve down, hostd run
records it under <town>/.runtime/hostd/start-failures, and serve logs and
shows it once it runs.

hostd run exits with the session's exit status. Killed (SIGHUP when Gas Town
kills its tmux session, SIGTERM), it ends the session; the sandbox stays
until Gas Town nukes the polecat ('hostd serve' removes it when the polecat's
directory goes, or 'hostd nuke').`,
		Args: cobra.MinimumNArgs(1),
		RunE: o.run,
	}
	a.Register(cmd.Flags(), o.table)
	return cmd
}

// forwarded are the prefixes of the variables Gas Town sets for a session
// that pass into the container; the container's own settings
// (GT_PROXY_*, GT_AGENT_*) do not.
var forwarded = []string{"GT_", "BD_", "BEADS_", "CLAUDE", "ANTHROPIC_"}

// gitIdentity is the git identity for the polecat's clone in its sandbox,
// as a host polecat's commits get it: the author's name Gas Town gives
// the session (GIT_AUTHOR_NAME, the polecat's name) or else git's
// user.name on the host, and git's user.email on the host, as git reads
// them in the polecat's worktree (dir). The container has no git
// configuration of its own: without these, git there refuses to commit.
func gitIdentity(ctx context.Context, dir string, getenv func(string) string) (name, email string) {
	config := func(key string) string {
		args := []string{"config", key}
		if dir != "" {
			args = append([]string{"-C", dir}, args...)
		}
		out, err := exec.CommandContext(ctx, "git", args...).Output()
		if err != nil {
			return ""
		}
		return strings.TrimSpace(string(out))
	}
	name = getenv("GIT_AUTHOR_NAME")
	if name == "" {
		name = config("user.name")
	}
	return name, config("user.email")
}

// sessionEnv is the variables of environ a session gets, NAME=value
// each: those under forwarded, and those named in extra.
func sessionEnv(environ, extra []string) []string {
	var env []string
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if slices.Contains(extra, name) {
			env = append(env, kv)
			continue
		}
		if strings.HasPrefix(name, "GT_PROXY_") || strings.HasPrefix(name, "GT_AGENT_") {
			continue
		}
		if slices.ContainsFunc(forwarded, func(p string) bool { return strings.HasPrefix(name, p) }) {
			env = append(env, kv)
		}
	}
	return env
}

func (o *runOptions) run(cmd *cobra.Command, args []string) error {
	settings.Bind(cmd.Flags(), o.Viper, o.table) // sandbox.runtime is shared
	if err := settings.Load(o.Viper, o.table); err != nil {
		return err
	}
	id, err := wire.ParseIdentity(os.Getenv("GT_RIG") + "/" + os.Getenv("GT_POLECAT"))
	if err != nil {
		return fmt.Errorf("hostd run runs the polecat named by $GT_RIG and $GT_POLECAT, which Gas Town sets: %w", err)
	}
	ctx := cmd.Context()
	progress := cmd.ErrOrStderr()
	rt, err := o.sandboxRuntime(cmd)
	if err != nil {
		return o.failed(ctx, id, err)
	}
	if err := o.start(ctx, rt, id, progress); err != nil {
		return o.failed(ctx, id, err)
	}
	o.started(ctx, id)
	if err := markLiveness(ctx); err != nil {
		fmt.Fprintf(progress, "hostd run: Gas Town's liveness will not see this session: %v\n", err)
	}
	if p, ok := sandbox.PaneFromEnv(os.Getenv); ok {
		panes := &sandbox.Panes{Dir: state.For(o.Town()).Panes()}
		if err := panes.Record(id, p); err != nil {
			fmt.Fprintf(progress, "hostd run: a gt handoff --cycle from the container will save the state but not start the next session: %v\n", err)
		}
		defer panes.Forget(id, p.PID)
	}
	return o.session(ctx, rt, id, args)
}

// sandboxRuntime is the runtime sandbox.runtime names, built from its
// settings, which are checked first (and sandbox.transport; kubernetes:
// sandbox.url and docker's own settings).
func (o *runOptions) sandboxRuntime(cmd *cobra.Command) (sandbox.Runtime, error) {
	switch o.spec.Transport {
	case "", "auto", "quic", "tcp": // gt-agent's --transport
	default:
		return nil, fmt.Errorf("sandbox.transport %q: want auto, quic or tcp", o.spec.Transport)
	}
	if runtimes.IsKubernetes(o.rt.Name) {
		if err := settings.Explain(o.rt.Kubernetes.Validate(), &o.rt.Kubernetes, o.table, o.Where(cmd.Flags())); err != nil {
			return nil, err
		}
		if err := kube.CheckSpec(o.spec); err != nil {
			return nil, err
		}
	}
	return runtimes.New(o.rt)
}

// listenPort is the port of hostd serve's listen setting.
func (o *runOptions) listenPort() string {
	if _, port, err := net.SplitHostPort(o.Viper.GetString("listen")); err == nil && port != "" {
		return port
	}
	return fmt.Sprint(wire.DefaultPort)
}
