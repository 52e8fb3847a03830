package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"

	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

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
