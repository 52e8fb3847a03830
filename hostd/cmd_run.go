package main

import (
	"cmp"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/polecat-sidecar/sidecar/hostd/api"
	"github.com/polecat-sidecar/sidecar/hostd/pki"
	"github.com/polecat-sidecar/sidecar/hostd/relay"
	"github.com/polecat-sidecar/sidecar/hostd/sandbox"
	"github.com/polecat-sidecar/sidecar/hostd/state"
	"github.com/polecat-sidecar/sidecar/internal/exit"
	"github.com/polecat-sidecar/sidecar/internal/settings"
	"github.com/polecat-sidecar/sidecar/internal/termsafe"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// runOptions are hostd run's settings.
type runOptions struct {
	*app
	runtime string
	spec    sandbox.Spec
	table   []settings.Setting // runSettings of the fields above
}

// runSettings is every setting of hostd run (and its key under sandbox.
// in config.yaml, shared with hostd nuke and serve's reaper).
func runSettings(o *runOptions) []settings.Setting {
	return []settings.Setting{
		{Key: "sandbox.runtime", Flag: "runtime", Usage: "container runtime: docker or podman", Value: &o.runtime},
		{Key: "sandbox.image", Flag: "image", Usage: "the polecat image (required), among the runtime's local images: hostd run does not pull", Value: &o.spec.Image},
		{Key: "sandbox.url", Flag: "url", Usage: "hostd's URL from inside the container (default https://host.docker.internal:<listen port>)", Value: &o.spec.URL},
		{Key: "sandbox.network", Flag: "network", Usage: "the container's network (default: the runtime's)", Value: &o.spec.Network},
		{Key: "sandbox.mounts", Flag: "mount", Usage: "a volume for the container, SRC:DST[:ro] as the runtime's -v (repeatable)", Value: &o.spec.Mounts},
		{Key: "sandbox.cpus", Flag: "cpus", Usage: "the container's CPU limit, as the runtime's --cpus", Value: &o.spec.CPUs},
		{Key: "sandbox.memory", Flag: "memory", Usage: "the container's memory limit, as the runtime's --memory", Value: &o.spec.Memory},
		{Key: "sandbox.pids_limit", Flag: "pids-limit", Usage: "the container's process limit (0: none)", Value: &o.spec.PidsLimit},
		{Key: "sandbox.env", Flag: "env", Usage: "also pass this variable to the session (repeatable; GT_*, BD_*, BEADS_*, CLAUDE*, ANTHROPIC_* always are)", Value: &o.spec.Env},
		{Key: "sandbox.agent", Flag: "agent", Usage: "gt-agent's path in the image", Value: &o.spec.Agent},
	}
}

func newRunCmd(a *app) *cobra.Command {
	o := &runOptions{app: a, runtime: "docker", spec: sandbox.Spec{Agent: "/usr/local/bin/gt-agent"}}
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
fails, there or later (a first clone that fails), prints one line saying
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
	a.register(cmd.Flags(), o.table)
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

// sessionEnv is the names of environ's variables a session gets: those
// under forwarded, and extra.
func sessionEnv(environ, extra []string) []string {
	names := slices.Clone(extra)
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "GT_PROXY_") || strings.HasPrefix(name, "GT_AGENT_") {
			continue
		}
		for _, p := range forwarded {
			if strings.HasPrefix(name, p) && !slices.Contains(names, name) {
				names = append(names, name)
			}
		}
	}
	return names
}

func (o *runOptions) run(cmd *cobra.Command, args []string) error {
	settings.Bind(cmd.Flags(), o.v, o.table) // sandbox.runtime is shared
	if err := settings.Load(o.v, o.table); err != nil {
		return err
	}
	id, err := wire.ParseIdentity(os.Getenv("GT_RIG") + "/" + os.Getenv("GT_POLECAT"))
	if err != nil {
		return fmt.Errorf("hostd run runs the polecat named by $GT_RIG and $GT_POLECAT, which Gas Town sets: %w", err)
	}
	rt := sandbox.Runtime{Bin: o.runtime}
	ctx := cmd.Context()
	progress := cmd.ErrOrStderr()
	if err := o.start(ctx, rt, id, progress); err != nil {
		return o.failed(ctx, id, err)
	}
	o.started(ctx, id)
	if err := markLiveness(ctx); err != nil {
		fmt.Fprintf(progress, "hostd run: Gas Town's liveness will not see this session: %v\n", err)
	}
	if p, ok := sandbox.PaneFromEnv(os.Getenv); ok {
		panes := &sandbox.Panes{Dir: state.For(o.town()).Panes()}
		if err := panes.Record(id, p); err != nil {
			fmt.Fprintf(progress, "hostd run: a gt handoff --cycle from the container will save the state but not start the next session: %v\n", err)
		}
		defer panes.Forget(id, p.PID)
	}
	return o.session(ctx, rt, id, args)
}

// start readies id's sandbox for a session: it checks what a start needs
// (preflight), then makes, starts and clones the sandbox as needed
// (ensure).
func (o *runOptions) start(ctx context.Context, rt sandbox.Runtime, id wire.Identity, progress io.Writer) error {
	if o.spec.Image == "" {
		return errors.New("no image: give --image or set sandbox.image in " + o.configPath())
	}
	if o.spec.URL == "" {
		o.spec.URL = "https://host.docker.internal:" + o.listenPort()
	}
	o.spec.Env = sessionEnv(os.Environ(), o.spec.Env)
	o.spec.BeatInterval = o.v.GetDuration("liveness.beat_interval") // hostd serve's, from config.yaml or HOSTD_LIVENESS_BEAT_INTERVAL
	if err := o.preflight(ctx, rt, id); err != nil {
		return err
	}
	return o.ensure(ctx, rt, id, progress)
}

// preflightTimeout bounds the checks before a start, so that one that
// cannot succeed fails within seconds, on a daemon or engine that hangs
// too.
const preflightTimeout = 15 * time.Second

// preflight checks, before anything is made, what starting id needs:
// hostd serve answering on the town's control socket (without it the
// sandbox's agent cannot join, nor the pane show the session), the
// runtime's CLI and its engine, and, for a sandbox not made yet, its
// image among the runtime's local images. Its error says what to do.
func (o *runOptions) preflight(ctx context.Context, rt sandbox.Runtime, id wire.Identity) error {
	ctx, cancel := context.WithTimeout(ctx, preflightTimeout)
	defer cancel()
	if err := api.NewSocketClient(state.For(o.town()).Socket()).Health(ctx); errors.Is(err, api.ErrNotRunning) {
		return err
	} else if err != nil {
		return fmt.Errorf("hostd serve does not answer (restart it): %w", err)
	}
	info, err := rt.Inspect(ctx, sandbox.Name(id))
	switch {
	case errors.Is(err, sandbox.ErrNoRuntime):
		return err
	case err != nil:
		return fmt.Errorf("the container runtime does not answer (start its engine, or name the one to use in sandbox.runtime): %w", err)
	case info.Exists:
		return nil // made from its image already
	}
	switch ok, err := rt.ImageExists(ctx, o.spec.Image); {
	case err != nil:
		return fmt.Errorf("looking for image %s: %w", o.spec.Image, err)
	case !ok:
		return fmt.Errorf("image %s is not among %s's images: build it ('make image'), pull or load it ('%s pull %s'), or set sandbox.image in %s to one that is",
			o.spec.Image, rt.Bin, rt.Bin, o.spec.Image, o.configPath())
	}
	return nil
}

// reportTimeout bounds telling hostd serve how a start went.
const reportTimeout = 5 * time.Second

// failed reports that id's start failed with err to hostd serve, which
// logs it and shows it in hostd status until the next start succeeds;
// when serve does not take it (it is down), hostd run records it itself
// (sandbox.Starts), for serve to show once it runs. It returns the
// error for Gas Town's pane: one line, err's text bounded (it may quote
// the runtime and the container) and escaped, and where else it shows.
func (o *runOptions) failed(ctx context.Context, id wire.Identity, err error) error {
	reason := wire.TruncateReason(err.Error())
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), reportTimeout)
	defer cancel()
	where := "'hostd status' shows it"
	if _, rerr := api.NewSocketClient(state.For(o.town()).Socket()).ReportStartFailure(ctx, api.Identity(id), reason); rerr != nil {
		if _, ferr := o.failures().Failed(id, reason); ferr != nil {
			where = fmt.Sprintf("telling hostd serve failed (%v), and so did %v", rerr, ferr)
		} else if errors.Is(rerr, api.ErrNotRunning) {
			where = "'hostd status' shows it once hostd serve runs"
		}
	}
	return fmt.Errorf("%s not started: %s; %s", id, termsafe.Line(reason), where)
}

// started tells hostd serve that id started, which clears the failure
// recorded for it, if any; when serve does not take it, hostd run clears
// the record itself.
func (o *runOptions) started(ctx context.Context, id wire.Identity) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), reportTimeout)
	defer cancel()
	if _, err := api.NewSocketClient(state.For(o.town()).Socket()).ClearStartFailure(ctx, api.Identity(id)); err != nil {
		_, _ = o.failures().Started(id)
	}
}

// failures are the town's records of failed starts, for when hostd serve
// does not take hostd run's report.
func (o *runOptions) failures() *sandbox.Starts {
	return &sandbox.Starts{Dir: state.For(o.town()).StartFailures(), Town: o.town()}
}

// ensure makes id's sandbox when it has none, starts it when stopped, and
// clones the rig into it when it has no clone. A sandbox it made goes
// again when a later step fails (removeOnFailure).
func (o *runOptions) ensure(ctx context.Context, rt sandbox.Runtime, id wire.Identity, progress io.Writer) (failure error) {
	name, town := sandbox.Name(id), o.town()
	info, err := rt.Inspect(ctx, name)
	if err != nil {
		return err
	}
	home, err := sandbox.Home(town, id)
	if err != nil {
		return err
	}
	if info.Exists && info.Town == town && !sandbox.SameHome(info.Home, home) {
		// Gas Town nuked the polecat and gave its name to this one before
		// hostd serve's reaper saw the directory go: that sandbox, its
		// files and its certificate are the earlier polecat's.
		fmt.Fprintf(progress, "hostd run: %s is the sandbox of an earlier polecat named %s (Gas Town nuked it and made this one since): removing it\n", name, id)
		ca, err := o.openCA()
		if err != nil {
			return err
		}
		if err := o.nuke(ctx, ca, rt, name, id, progress); err != nil {
			return fmt.Errorf("removing the sandbox of the earlier polecat named %s: %w", id, err)
		}
		info = sandbox.Info{}
	}
	switch {
	case info.Exists && info.Town != town:
		return fmt.Errorf("container %s is not this town's sandbox of %s (its town: %q): remove it ('%s rm -f %s') or run this town's polecat elsewhere", name, id, info.Town, o.runtime, name)
	case !info.Exists:
		fmt.Fprintf(progress, "hostd run: making the sandbox of %s (%s, image %s)\n", id, name, o.spec.Image)
		ca, err := o.openCA()
		if err != nil {
			return err
		}
		token, err := ca.CreateToken(id, pki.DefaultTokenTTL)
		if err != nil {
			return err
		}
		if err := rt.Create(ctx, o.spec, town, id, home, token); err != nil {
			return err
		}
		defer removeOnFailure(ctx, rt, name, &failure)
	case !info.Running:
		fmt.Fprintf(progress, "hostd run: starting the stopped sandbox of %s (%s)\n", id, name)
		if err := rt.Start(ctx, name); err != nil {
			return err
		}
	}
	branch, wt := "", ""
	if dir, ok := relay.Worktree(town, id); ok {
		wt = dir
		if out, err := exec.CommandContext(ctx, "git", "-C", wt, "symbolic-ref", "-q", "--short", "HEAD").Output(); err == nil {
			branch = strings.TrimSpace(string(out))
		}
	}
	ctx, cancel := context.WithTimeout(ctx, sandboxGitTimeout)
	defer cancel()
	cloned, err := rt.Clone(ctx, id, branch)
	if err != nil {
		return fmt.Errorf("cloning %s into the sandbox (is hostd serve running and reachable at %s?): %w", id.Rig, o.spec.URL, err)
	}
	if cloned {
		fmt.Fprintf(progress, "hostd run: cloned %s into %s on %s\n", id.Rig, sandbox.WorkDir(id), branchOrDefault(branch))
	} else if err := checkout(ctx, rt, id, branch, progress); err != nil {
		return err
	}
	if name, email := gitIdentity(ctx, wt, os.Getenv); name != "" || email != "" {
		if err := rt.GitIdentity(ctx, id, name, email); err != nil {
			fmt.Fprintf(progress, "hostd run: git in the sandbox has no identity to commit with: %v\n", err)
		}
	}
	return nil
}

// sandboxGitTimeout bounds the git hostd run runs in a sandbox before a
// session (the first clone, a switch of branch, the identity): a
// container whose git hangs fails the start, reported, rather than keep
// Gas Town's pane waiting unseen.
const sandboxGitTimeout = 10 * time.Minute

// checkout brings the clone in id's sandbox to branch, the one Gas Town
// checked out in the polecat's worktree (a reused polecat's new branch),
// and says on progress what it did with the work it found there.
func checkout(ctx context.Context, rt sandbox.Runtime, id wire.Identity, branch string, progress io.Writer) error {
	sw, err := rt.Checkout(ctx, id, branch)
	if err != nil {
		return fmt.Errorf("bringing the sandbox's clone to %s, the branch Gas Town checked out for %s (the session does not start on another branch): %w", branch, id, err)
	}
	if sw.From == sw.To {
		return nil
	}
	fmt.Fprintf(progress, "hostd run: the clone in %s moved from %s to %s, the polecat's new branch\n", sandbox.WorkDir(id), cmp.Or(sw.From, "a detached HEAD"), sw.To)
	if sw.Stash != "" {
		fmt.Fprintf(progress, "hostd run: uncommitted work found on %s is kept in the sandbox's stash, not in %s: git stash show -p %s\n", cmp.Or(sw.From, "the detached HEAD"), sw.To, sw.Stash)
	}
	switch {
	case sw.Kept != "":
		fmt.Fprintf(progress, "hostd run: %d commit(s) of the detached HEAD that origin does not have are kept on branch %s in the sandbox\n", sw.Unpushed, sw.Kept)
	case sw.Unpushed > 0:
		fmt.Fprintf(progress, "hostd run: %d commit(s) of %s that origin does not have stay on that branch in the sandbox\n", sw.Unpushed, sw.From)
	}
	return nil
}

// removeOnFailure removes sandbox name, which this start made, once the
// start has failed (*failure), so that a failed start leaves no container
// behind: the next start makes it afresh. A sandbox that was there
// before is never removed: it holds the polecat's work.
func removeOnFailure(ctx context.Context, rt sandbox.Runtime, name string, failure *error) {
	if *failure == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if err := rt.Remove(ctx, name); err != nil {
		*failure = fmt.Errorf("%w (and removing the sandbox it had made failed: %v; remove it with '%s rm -f %s')", *failure, err, rt.Bin, name)
	}
}

func branchOrDefault(b string) string {
	if b == "" {
		return "the default branch"
	}
	return b
}

// session runs one session in the sandbox and, on a terminal, shows it
// there through hostd's pane channel (the escape filter of hostd attach;
// keys in, screen out) until it ends; it exits with the session's status.
// A signal ends the session (the sandbox stays).
func (o *runOptions) session(ctx context.Context, rt sandbox.Runtime, id wire.Identity, args []string) error {
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
	if isTTY(os.Stdin) && isTTY(os.Stdout) {
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
		fmt.Fprintf(stderr, "hostd run: ending the session in %s: %v\n", sandbox.Name(id), err)
	}
	var ee *exec.ExitError
	if exited != nil && !errors.As(exited, &ee) {
		return fmt.Errorf("running the session in %s: %w", sandbox.Name(id), exited)
	}
	if code != 0 && errb.Len() > 0 {
		fmt.Fprintf(stderr, "hostd run: %s", errb.String()) // from the container: escaped
	}
	return exit.Status(code)
}

// show attaches this terminal to id's session, read-write, until done
// closes: again whenever the attach ends first (the session not started
// yet, a detach, the tunnel reconnecting). It closes shown when the
// terminal is back as it was.
func (o *runOptions) show(ctx context.Context, id wire.Identity, done <-chan struct{}, shown chan<- struct{}) {
	defer close(shown)
	ao := &attachOptions{app: o.app, rw: true}
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

// listenPort is the port of hostd serve's listen setting.
func (o *runOptions) listenPort() string {
	if _, port, err := net.SplitHostPort(o.v.GetString("listen")); err == nil && port != "" {
		return port
	}
	return fmt.Sprint(wire.DefaultPort)
}

// configPath is the config file hostd reads (or would).
func (o *runOptions) configPath() string {
	if o.config != "" {
		return o.config
	}
	return state.For(o.town()).Config()
}
