package run

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/polecat-sidecar/sidecar/hostd/api"
	"github.com/polecat-sidecar/sidecar/hostd/cli/command"
	"github.com/polecat-sidecar/sidecar/hostd/pki"
	"github.com/polecat-sidecar/sidecar/hostd/relay/gastown"
	"github.com/polecat-sidecar/sidecar/hostd/sandbox"
	"github.com/polecat-sidecar/sidecar/hostd/sandbox/kube"
	"github.com/polecat-sidecar/sidecar/hostd/state"
	"github.com/polecat-sidecar/sidecar/internal/termsafe"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// start readies id's sandbox for a session: it checks what a start needs
// (preflight), then makes or starts the sandbox as needed, and has its
// agent ready the clone (ensure).
func (o *runOptions) start(ctx context.Context, rt sandbox.Runtime, id wire.Identity, progress io.Writer) error {
	if o.spec.Image == "" {
		return errors.New("no image: give --image or set sandbox.image in " + o.ConfigPath())
	}
	if o.spec.URL == "" {
		o.spec.URL = "https://host.docker.internal:" + o.listenPort()
	}
	o.spec.BeatInterval = o.Viper.GetDuration("liveness.beat_interval") // hostd serve's, from config.yaml or HOSTD_LIVENESS_BEAT_INTERVAL
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
	if err := o.Client().Health(ctx); errors.Is(err, api.ErrNotRunning) {
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
		load := fmt.Sprintf("pull or load it ('%s pull %s')", rt.Name(), o.spec.Image)
		if rt.Name() == kube.RuntimeName {
			load = "load it onto the cluster's nodes, or set sandbox.kubernetes.image_pull_policy to IfNotPresent to let them pull it"
		}
		return fmt.Errorf("image %s is not among %s's images: build it ('make image'), %s, or set sandbox.image in %s to one that is",
			o.spec.Image, rt.Name(), load, o.ConfigPath())
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
	if _, rerr := o.Client().ReportStartFailure(ctx, api.Identity(id), reason); rerr != nil {
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
	if _, err := o.Client().ClearStartFailure(ctx, api.Identity(id)); err != nil {
		if _, err := o.failures().Started(id); err != nil {
			fmt.Fprintf(command.Stderr, "hostd run: hostd status will still show the failed start of %s until the next start: %v\n", id, err)
		}
	}
}

// failures are the town's records of failed starts, for when hostd serve
// does not take hostd run's report.
func (o *runOptions) failures() *sandbox.Starts {
	return &sandbox.Starts{Dir: state.For(o.Town()).StartFailures(), Town: o.Town()}
}

// ensure makes id's sandbox when it has none and starts it when stopped,
// waits for its agent, and has the agent clone the rig, or bring the
// clone to the worktree's branch (prepare). A sandbox it made goes again
// when a later step fails (removeOnFailure).
func (o *runOptions) ensure(ctx context.Context, rt sandbox.Runtime, id wire.Identity, progress io.Writer) (failure error) {
	name, town := sandbox.Name(id), o.Town()
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
		ca, err := o.OpenCA()
		if err != nil {
			return err
		}
		if err := nuke(ctx, o.App, ca, rt, name, id, progress); err != nil {
			return fmt.Errorf("removing the sandbox of the earlier polecat named %s: %w", id, err)
		}
		info = sandbox.Info{}
	}
	switch {
	case info.Exists && info.Town != town:
		return fmt.Errorf("%s %s is not this town's sandbox of %s (its town: %q): remove it, or run this town's polecat elsewhere", rt.Name(), name, id, info.Town)
	case !info.Exists:
		fmt.Fprintf(progress, "hostd run: making the sandbox of %s (%s, image %s)\n", id, name, o.spec.Image)
		ca, err := o.OpenCA()
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
	conn, err := o.connect(ctx, rt, id, agentWait, progress)
	if err != nil {
		return err
	}
	if th, ok := rt.(sandbox.TokenHolder); ok {
		if err := th.DropToken(ctx, name); err != nil {
			fmt.Fprintf(progress, "hostd run: the join token of %s, spent, is still kept: %v\n", name, err)
		}
	}
	req := wire.SandboxRequest{Op: wire.SandboxPrepare}
	wt, ok := gastown.Worktree(town, id)
	if ok {
		if out, err := exec.CommandContext(ctx, "git", "-C", wt, "symbolic-ref", "-q", "--short", "HEAD").Output(); err == nil {
			req.Branch = strings.TrimSpace(string(out))
		}
	}
	req.Name, req.Email = gitIdentity(ctx, wt, os.Getenv)
	c, err := o.prepare(ctx, rt, id, conn, req)
	if err != nil {
		return fmt.Errorf("bringing the sandbox's clone to %s, the branch Gas Town checked out for %s (the session does not start on another branch): %w", branchOrDefault(req.Branch), id, err)
	}
	prepared(c, progress)
	return nil
}

// sandboxGitTimeout bounds the git the agent runs before a session (the
// first clone, a switch of branch): a sandbox whose git hangs fails the
// start, reported, rather than keep Gas Town's pane waiting unseen.
const sandboxGitTimeout = 10 * time.Minute

// prepare has id's agent ready the clone for a session (req, a
// wire.SandboxPrepare) on conn, or on a new stream when the one before
// broke without an answer.
func (o *runOptions) prepare(ctx context.Context, rt sandbox.Runtime, id wire.Identity, conn io.ReadWriteCloser, req wire.SandboxRequest) (wire.SandboxClone, error) {
	ctx, cancel := context.WithTimeout(ctx, sandboxGitTimeout)
	defer cancel()
	var broke error
	for range maxBreaks {
		var err error
		if conn == nil {
			if conn, err = o.connect(ctx, rt, id, agentWait, io.Discard); err != nil {
				return wire.SandboxClone{}, err
			}
		}
		x, err := send(ctx, conn, req)
		conn = nil
		if err != nil {
			broke = err
			continue
		}
		a, err := x.next()
		x.Close()
		switch {
		case err == nil && a.Status == wire.SandboxPrepared:
			return *a.Clone, nil
		case err == nil:
			return wire.SandboxClone{}, fmt.Errorf("the agent answered %q", a.Status)
		case ctx.Err() != nil:
			return wire.SandboxClone{}, fmt.Errorf("the agent did not finish within %v: %w", sandboxGitTimeout, ctx.Err())
		}
		if _, ok := errors.AsType[*agentError](err); ok {
			return wire.SandboxClone{}, err
		}
		broke = err
	}
	return wire.SandboxClone{}, fmt.Errorf("the sandbox channel broke %d times before the agent answered: %w", maxBreaks, broke)
}

// prepared says on progress what the agent did to the clone: made it, or
// moved it to the polecat's new branch, and where the work it found went.
// What the agent says is escaped.
func prepared(c wire.SandboxClone, progress io.Writer) {
	p := func(format string, args ...any) {
		fmt.Fprint(progress, termsafe.Line(fmt.Sprintf(format, args...))+"\n")
	}
	switch {
	case c.Cloned:
		p("hostd run: cloned the rig into %s on %s", c.Dir, branchOrDefault(c.To))
		return
	case c.From == c.To:
		return
	}
	p("hostd run: the clone in %s moved from %s to %s, the polecat's new branch", c.Dir, cmp.Or(c.From, "a detached HEAD"), c.To)
	if c.Stash != "" {
		p("hostd run: uncommitted work found on %s is kept in the sandbox's stash, not in %s: git stash show -p %s", cmp.Or(c.From, "the detached HEAD"), c.To, c.Stash)
	}
	switch {
	case c.Kept != "":
		p("hostd run: %d commit(s) of the detached HEAD that origin does not have are kept on branch %s in the sandbox", c.Unpushed, c.Kept)
	case c.Unpushed > 0:
		p("hostd run: %d commit(s) of %s that origin does not have stay on that branch in the sandbox", c.Unpushed, c.From)
	}
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
		*failure = fmt.Errorf("%w (and removing the sandbox it had made failed: %v; remove it with 'hostd nuke' of the polecat, or '%s rm -f %s')", *failure, err, rt.Name(), name)
	}
}

func branchOrDefault(b string) string {
	if b == "" {
		return "the default branch"
	}
	return b
}
