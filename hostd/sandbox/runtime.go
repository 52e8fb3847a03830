package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// Runtime owns a sandbox's life and nothing more: it creates, starts,
// inspects, lists (by the town's and polecat's labels) and removes
// sandboxes. Everything after the sandbox's agent is up (its sessions,
// the first clone, the git identity, the pane) goes over the polecat's
// own tunnel, so every runtime behaves the same from there on.
type Runtime interface {
	// Name names the runtime in messages: docker, podman, kubernetes.
	Name() string
	// Create creates and starts polecat id's sandbox in town, for the
	// polecat's directory whose Home is home, its agent joining hostd
	// with the one-time token. A failed Create leaves nothing behind,
	// and never touches a sandbox it did not create.
	Create(ctx context.Context, s Spec, town string, id wire.Identity, home, token string) error
	// Start starts a stopped sandbox.
	Start(ctx context.Context, name string) error
	// Inspect says whether sandbox name exists, runs, and whose it is.
	Inspect(ctx context.Context, name string) (Info, error)
	// List is every sandbox of town, running or not.
	List(ctx context.Context, town string) ([]Sandbox, error)
	// Remove removes a sandbox, running or not, with its storage; no
	// such sandbox is not an error.
	Remove(ctx context.Context, name string) error
	// ImageExists says whether the runtime can start image without a
	// pull hostd did not ask for.
	ImageExists(ctx context.Context, image string) (bool, error)
}

// CLI is a container runtime driven through its command line: docker or
// podman.
type CLI struct {
	// Bin is the CLI: docker or podman (a name on PATH or a path).
	Bin string
}

// Name is the CLI's name.
func (r CLI) Name() string { return filepath.Base(r.Bin) }

// Info is what Inspect found.
type Info struct {
	// Exists is false when there is no such sandbox.
	Exists bool
	// Running is true while it runs.
	Running bool
	// Town, Polecat and Home are its labels.
	Town, Polecat, Home string
	// Problem is why the sandbox is not running, in the runtime's own
	// words (an image that cannot be pulled, a pod that cannot be
	// scheduled, a crash loop): "" when the runtime names none.
	Problem string
}

// ErrNoRuntime is returned when the runtime's CLI is not installed.
var ErrNoRuntime = errors.New("container runtime not found")

// Command is the runtime run with args, for a caller that wires its
// input and output itself.
func (r CLI) Command(ctx context.Context, args ...string) (*exec.Cmd, error) {
	if _, err := exec.LookPath(r.Bin); err != nil {
		return nil, fmt.Errorf("%w: %s (install it, or give --runtime)", ErrNoRuntime, r.Bin)
	}
	return exec.CommandContext(ctx, r.Bin, args...), nil
}

// run runs the runtime with args (and env added to its environment) and
// returns its standard output; an error carries its standard error.
func (r CLI) run(ctx context.Context, env []string, args ...string) (string, error) {
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
// output and error, which can quote what the sandbox holds.
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

// Inspect says whether container name exists, runs, and whose it is;
// one that ran and stopped has its exit status as its Problem.
func (r CLI) Inspect(ctx context.Context, name string) (Info, error) {
	out, err := r.run(ctx, nil, "container", "inspect", "-f",
		`{{.State.Running}}{{"\t"}}{{index .Config.Labels "`+TownLabel+`"}}{{"\t"}}{{index .Config.Labels "`+PolecatLabel+`"}}{{"\t"}}{{index .Config.Labels "`+HomeLabel+`"}}`+
			`{{"\t"}}{{.State.Status}}{{"\t"}}{{.State.ExitCode}}{{"\t"}}{{.State.Error}}`, name)
	if err != nil {
		if strings.Contains(strings.ToLower(err.Error()), "no such") {
			return Info{}, nil
		}
		return Info{}, err
	}
	f := strings.SplitN(strings.TrimSpace(out), "\t", 7)
	for len(f) < 7 {
		f = append(f, "")
	}
	info := Info{Exists: true, Running: f[0] == "true", Town: f[1], Polecat: f[2], Home: f[3]}
	if !info.Running && f[4] != "" && f[4] != "created" {
		info.Problem = oneLine(strings.TrimSuffix(fmt.Sprintf("%s with status %s: %s", f[4], f[5], f[6]), ": "))
	}
	return info, nil
}

// Start starts a stopped container.
func (r CLI) Start(ctx context.Context, name string) error {
	_, err := r.run(ctx, nil, "start", name)
	return err
}

// Remove removes a container, running or not, and its anonymous volumes;
// no such container is not an error.
func (r CLI) Remove(ctx context.Context, name string) error {
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
func (r CLI) List(ctx context.Context, town string) ([]Sandbox, error) {
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

// ImageExists says whether image is among the runtime's local images:
// hostd run makes a sandbox only from one there, leaving a pull to the
// operator rather than making Gas Town's session start wait for it or
// fail in it.
func (r CLI) ImageExists(ctx context.Context, image string) (bool, error) {
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

// TokenHolder is a Runtime that keeps a sandbox's join token in a store
// of its own (Kubernetes: a Secret) rather than only in the sandbox's
// first start: once the sandbox's agent has joined, hostd run has it
// drop the token, spent, so that nothing holds it.
type TokenHolder interface {
	// DropToken removes sandbox name's join token; none is not an error.
	DropToken(ctx context.Context, name string) error
}
