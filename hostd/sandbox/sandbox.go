// Package sandbox is the container a polecat runs in when Gas Town starts
// it through 'hostd run' (its runtime.exec_wrapper). Gas Town's polecat
// has three layers: the session (Claude, which cycles often), the sandbox
// (which persists through every cycle) and the slot. The container is the
// sandbox: the first session of a polecat creates it, every later one
// starts in it, and it goes only when Gas Town nukes the polecat (the
// Reaper sees the polecat's directory gone, or 'hostd nuke').
//
// The container runtime is a CLI, docker or podman, driven by argv (never
// a shell): this package names the container, creates, starts, lists and
// removes it, and builds the argv that runs a session in it. It also
// keeps the starts hostd run could not make (Starts), for hostd status.
package sandbox

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// Labels every sandbox carries: the town it belongs to (its root's
// absolute path) and the polecat.
const (
	TownLabel    = "polecat-sidecar.town"
	PolecatLabel = "polecat-sidecar.polecat"
)

// SessionName is the tmux session in the container that holds the
// polecat's sessions, the one its agent watches.
const SessionName = "polecat"

// Name is the container of polecat id: gt-<rig>-<name>, the name Gas Town
// gives the polecat's certificate and its Daytona workspace.
func Name(id wire.Identity) string { return "gt-" + id.Rig + "-" + id.Name }

// WorkDir is where the polecat's clone of its rig lives in the container.
func WorkDir(id wire.Identity) string { return "/work/" + id.Rig }

// Runtime is the container runtime's CLI.
type Runtime struct {
	// Bin is the CLI: docker or podman (a name on PATH or a path).
	Bin string
}

// Info is what Inspect found.
type Info struct {
	// Exists is false when there is no such container.
	Exists bool
	// Running is true while it runs.
	Running bool
	// Town, Polecat and Home are its labels.
	Town, Polecat, Home string
}

// ErrNoRuntime is returned when the runtime's CLI is not installed.
var ErrNoRuntime = errors.New("container runtime not found")

// Command is the runtime run with args, for a caller that wires its
// input and output itself.
func (r Runtime) Command(ctx context.Context, args ...string) (*exec.Cmd, error) {
	if _, err := exec.LookPath(r.Bin); err != nil {
		return nil, fmt.Errorf("%w: %s (install it, or give --runtime)", ErrNoRuntime, r.Bin)
	}
	return exec.CommandContext(ctx, r.Bin, args...), nil
}

// run runs the runtime with args (and env added to its environment) and
// returns its standard output; an error carries its standard error.
func (r Runtime) run(ctx context.Context, env []string, args ...string) (string, error) {
	cmd, err := r.Command(ctx, args...)
	if err != nil {
		return "", err
	}
	cmd.Env = append(os.Environ(), env...)
	out, errb := &Capped{Max: maxOutput}, &Capped{Max: maxError}
	cmd.Stdout, cmd.Stderr = out, errb
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("%s %s: %w: %s", r.Bin, args[0], err, oneLine(errb.String()))
	}
	return out.String(), nil
}

// maxOutput and maxError bound what hostd keeps of a runtime command's
// output and error: what a command run in a sandbox prints is the
// polecat's to choose.
const (
	maxOutput = 1 << 20
	maxError  = 4 << 10
)

// Capped keeps the first Max bytes written to it and drops the rest.
type Capped struct {
	// Max is how many bytes it keeps.
	Max int
	buf bytes.Buffer
}

// Write keeps what fits and reports all of p written.
func (c *Capped) Write(p []byte) (int, error) {
	if room := c.Max - c.buf.Len(); room > 0 {
		c.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// String is what it kept.
func (c *Capped) String() string { return c.buf.String() }

// Len is how many bytes it kept.
func (c *Capped) Len() int { return c.buf.Len() }

// oneLine is a command's error output as one line of an error message:
// its lines joined with "; ", so that nothing it prints reads as a line
// of hostd's own.
func oneLine(s string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(strings.TrimSpace(s), "\n", " ; ")), " ")
}

// Inspect says whether container name exists, runs, and whose it is.
func (r Runtime) Inspect(ctx context.Context, name string) (Info, error) {
	out, err := r.run(ctx, nil, "container", "inspect", "-f",
		`{{.State.Running}}{{"\t"}}{{index .Config.Labels "`+TownLabel+`"}}{{"\t"}}{{index .Config.Labels "`+PolecatLabel+`"}}{{"\t"}}{{index .Config.Labels "`+HomeLabel+`"}}`, name)
	if err != nil {
		if strings.Contains(strings.ToLower(err.Error()), "no such") {
			return Info{}, nil
		}
		return Info{}, err
	}
	f := strings.SplitN(strings.TrimSpace(out), "\t", 4)
	for len(f) < 4 {
		f = append(f, "")
	}
	return Info{Exists: true, Running: f[0] == "true", Town: f[1], Polecat: f[2], Home: f[3]}, nil
}

// Start starts a stopped container.
func (r Runtime) Start(ctx context.Context, name string) error {
	_, err := r.run(ctx, nil, "start", name)
	return err
}

// Remove removes a container, running or not, and its anonymous volumes;
// no such container is not an error.
func (r Runtime) Remove(ctx context.Context, name string) error {
	_, err := r.run(ctx, nil, "rm", "-f", "-v", name)
	if err != nil && strings.Contains(strings.ToLower(err.Error()), "no such") {
		return nil
	}
	return err
}

// Sandbox is one container found by List.
type Sandbox struct {
	// Name and ID are the container's.
	Name, ID string
	// Polecat is its polecat.
	Polecat wire.Identity
	// Home is Home of the polecat's directory it was made for ("" for a
	// sandbox made before hostd labelled it).
	Home string
}

// List is every sandbox of town, running or not.
func (r Runtime) List(ctx context.Context, town string) ([]Sandbox, error) {
	out, err := r.run(ctx, nil, "ps", "-a", "--filter", "label="+TownLabel+"="+town,
		"--format", `{{.Names}}{{"\t"}}{{.ID}}{{"\t"}}{{.Label "`+PolecatLabel+`"}}{{"\t"}}{{.Label "`+HomeLabel+`"}}`)
	if err != nil {
		return nil, err
	}
	var list []Sandbox
	for _, line := range strings.Split(strings.TrimRight(out, "\r\n"), "\n") {
		f := strings.Split(strings.TrimRight(line, "\r"), "\t")
		if len(f) != 4 {
			continue
		}
		id, err := wire.ParseIdentity(f[2])
		if err != nil {
			continue // not one of ours, whatever its label says
		}
		list = append(list, Sandbox{Name: f[0], ID: f[1], Polecat: id, Home: f[3]})
	}
	return list, nil
}

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

// Create creates and starts polecat id's sandbox in town, for the
// polecat's directory whose Home is home, joining hostd with token. A
// container it created and could not start (a mount that
// is not there, no gt-agent at Agent) it removes: a failed Create leaves
// nothing behind, and never touches a container it did not create (one
// of that name already there fails the create).
func (r Runtime) Create(ctx context.Context, s Spec, town string, id wire.Identity, home, token string) error {
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

// ImageExists says whether image is among the runtime's local images:
// hostd run makes a sandbox only from one there, leaving a pull to the
// operator rather than making Gas Town's session start wait for it or
// fail in it.
func (r Runtime) ImageExists(ctx context.Context, image string) (bool, error) {
	_, err := r.run(ctx, nil, "image", "inspect", "--format", "{{.Id}}", image)
	if err != nil {
		msg := strings.ToLower(err.Error())
		if strings.Contains(msg, "no such image") || strings.Contains(msg, "image not known") {
			return false, nil
		}
		return false, err
	}
	return true, nil
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
func (r Runtime) Session(ctx context.Context, s Spec, id wire.Identity, tag string, command []string) (*exec.Cmd, error) {
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
func (r Runtime) Stop(ctx context.Context, s Spec, id wire.Identity, tag string) error {
	_, err := r.run(ctx, nil, "exec", Name(id), s.Agent, "session", "stop", "--tag", tag)
	return err
}

// Clone clones the rig into polecat id's sandbox, through its agent's git
// port, on branch when given (the polecat's branch, which Gas Town made in
// the rig's repository), unless a clone is there already. It reports
// whether it cloned.
func (r Runtime) Clone(ctx context.Context, id wire.Identity, branch string) (bool, error) {
	if _, err := r.run(ctx, nil, "exec", Name(id), "test", "-e", WorkDir(id)+"/.git"); err == nil {
		return false, nil
	}
	args := []string{"exec", Name(id), "git", "clone", "-q"}
	if branch != "" {
		args = append(args, "-b", branch)
	}
	_, err := r.run(ctx, nil, append(args, "http://"+agentGit+wire.GitPathPrefix+id.Rig, WorkDir(id))...)
	return err == nil, err
}

// Switch is what Checkout did to bring a clone to its polecat's branch.
type Switch struct {
	// From and To are the clone's branch before and after ("" for a
	// detached HEAD); equal when it was on the branch already.
	From, To string
	// Stash is the commit of the stash entry that holds the uncommitted
	// work Checkout found (tracked changes and untracked files), "" when
	// there was none.
	Stash string
	// Unpushed is how many commits of From (or of the detached HEAD) no
	// branch on origin has: they stay on From, or on Kept.
	Unpushed int
	// Kept is the branch Checkout made for a detached HEAD's commits
	// origin lacks, "" when it made none.
	Kept string
}

// Checkout brings the clone in polecat id's sandbox to branch, the one Gas
// Town checked out in the polecat's worktree (a reused polecat gets a new
// branch there while its sandbox stays), fetched from the rig through the
// agent's git port. Uncommitted work goes into a stash entry, never into
// the new branch; commits on the old branch stay on it. A branch of ""
// (the worktree's HEAD detached) leaves the clone as it is.
// docs/migrating.md: "A reused polecat works on its new branch".
func (r Runtime) Checkout(ctx context.Context, id wire.Identity, branch string) (Switch, error) {
	git := func(args ...string) (string, error) {
		out, err := r.run(ctx, nil, append([]string{"exec", Name(id), "git", "-C", WorkDir(id)}, args...)...)
		return strings.TrimSpace(out), err
	}
	from, _ := git("symbolic-ref", "-q", "--short", "HEAD")
	if from != "" && !isBranch(ctx, from) {
		return Switch{}, errors.New("the clone's HEAD names no branch git takes")
	}
	sw := Switch{From: from, To: from}
	if branch == "" || branch == from {
		return sw, nil
	}
	if !isBranch(ctx, branch) {
		return sw, fmt.Errorf("the worktree's branch %q is not a branch name git takes", branch)
	}
	local, remote := "refs/heads/"+branch, "refs/remotes/origin/"+branch
	if _, err := git("fetch", "-q", "origin", "+"+local+":"+remote); err != nil {
		return sw, fmt.Errorf("fetching %s from the rig: %w", branch, err)
	}
	if n, err := git("rev-list", "--count", "HEAD", "--not", "--remotes=origin"); err == nil {
		fmt.Sscan(n, &sw.Unpushed)
	}
	if from == "" && sw.Unpushed > 0 {
		// A detached HEAD's commits would be left to the reflog alone.
		head, err := git("rev-parse", "--verify", "HEAD")
		if err != nil || !isHex(head) {
			return sw, fmt.Errorf("naming the detached HEAD's commits: %w", err)
		}
		sw.Kept = "polecat-sidecar/detached-" + head[:12]
		if _, err := git("branch", "-f", sw.Kept, head); err != nil {
			return sw, fmt.Errorf("keeping the detached HEAD's commits on a branch: %w", err)
		}
	}
	if dirty, err := git("status", "--porcelain", "--untracked-files=all"); err != nil {
		return sw, fmt.Errorf("looking for uncommitted work: %w", err)
	} else if dirty != "" {
		msg := "polecat-sidecar: uncommitted work on " + cmp.Or(from, "a detached HEAD") + " when the session on " + branch + " started"
		if _, err := git("stash", "push", "-q", "--include-untracked", "-m", msg); err != nil {
			return sw, fmt.Errorf("keeping the uncommitted work in a stash: %w", err)
		}
		if sw.Stash, _ = git("rev-parse", "-q", "--verify", "refs/stash"); !isHex(sw.Stash) {
			sw.Stash = "stash@{0}"
		}
	}
	kept := ""
	if sw.Stash != "" {
		kept = " (the uncommitted work is in stash " + sw.Stash + ")"
	}
	if _, err := git("rev-parse", "-q", "--verify", local); err == nil {
		if _, err := git("checkout", "-q", branch); err != nil {
			return sw, fmt.Errorf("checking out %s%s: %w", branch, kept, err)
		}
		if _, err := git("merge", "-q", "--ff-only", remote); err != nil {
			// Back where it was, so that the next start tries again
			// rather than find the clone on the branch already.
			if from != "" {
				_, _ = git("checkout", "-q", from)
			}
			return sw, fmt.Errorf("bringing %s up to the rig's%s: %w", branch, kept, err)
		}
	} else if _, err := git("checkout", "-q", "-b", branch, "--track", remote); err != nil {
		return sw, fmt.Errorf("checking out %s%s: %w", branch, kept, err)
	}
	sw.To = branch
	return sw, nil
}

// isBranch says whether name is a branch name git takes (and no option).
func isBranch(ctx context.Context, name string) bool {
	return !strings.HasPrefix(name, "-") && exec.CommandContext(ctx, "git", "check-ref-format", "--branch", name).Run() == nil
}

// isHex says whether s is a commit's full hexadecimal name.
func isHex(s string) bool {
	return (len(s) == 40 || len(s) == 64) && strings.Trim(s, "0123456789abcdef") == ""
}

// GitIdentity sets the git identity of polecat id's clone in its sandbox
// (its user.name and user.email, where empty values are left alone).
func (r Runtime) GitIdentity(ctx context.Context, id wire.Identity, name, email string) error {
	for _, kv := range [][2]string{{"user.name", name}, {"user.email", email}} {
		if kv[1] == "" {
			continue
		}
		if _, err := r.run(ctx, nil, "exec", Name(id), "git", "-C", WorkDir(id), "config", kv[0], kv[1]); err != nil {
			return fmt.Errorf("setting %s in %s: %w", kv[0], Name(id), err)
		}
	}
	return nil
}

// agentGit is where gt-agent serves git in the container (its default
// --git-listen).
const agentGit = "127.0.0.1:9878"
