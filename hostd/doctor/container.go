package doctor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/polecat-sidecar/sidecar/hostd/sandbox"
	"github.com/polecat-sidecar/sidecar/internal/cli"
)

// Timeouts of the runtime's commands: asking its engine, and running the
// image's gt-agent, which starts a container.
const (
	runtimeTimeout = 15 * time.Second
	agentTimeout   = time.Minute
)

// The labels 'make image' gives the polecat image (Dockerfile.polecat):
// the version and commit its gt-agent was built from.
const (
	versionLabel  = "org.opencontainers.image.version"
	revisionLabel = "org.opencontainers.image.revision"
)

// Runtime checks the container runtime hostd run drives (sandbox.runtime):
// its CLI installed and its engine answering.
func Runtime(ctx context.Context, rt sandbox.CLI) Line {
	const check = "runtime"
	_, err := runtimeOutput(ctx, rt, runtimeTimeout, "info")
	switch {
	case errors.Is(err, sandbox.ErrNoRuntime):
		return fail(check, "install Docker (Docker Desktop on a Mac) or Podman, or set sandbox.runtime to the one installed", "%s is not installed: %v", rt.Bin, err)
	case err != nil:
		return fail(check, "start its engine (Docker Desktop; 'systemctl start docker'; 'podman machine start'), or point DOCKER_HOST at it",
			"%s's engine does not answer: %v", rt.Bin, err)
	}
	return ok(check, "%s: its engine answers", rt.Bin)
}

// Image checks the polecat image hostd run makes sandboxes from
// (sandbox.image): among the runtime's images, and its gt-agent (at agent
// in it, sandbox.agent) built as hostd was, by the image's labels or else
// by running it.
func Image(ctx context.Context, rt sandbox.CLI, image, agent string, hostd cli.Build) Line {
	const check = "image"
	if image == "" {
		return warn(check, "build one ('make image' makes polecat:<version>) and set sandbox.image in config.yaml",
			"no sandbox.image: hostd run cannot make a polecat's sandbox")
	}
	lookCtx, cancel := context.WithTimeout(ctx, runtimeTimeout)
	defer cancel()
	switch found, err := rt.ImageExists(lookCtx, image); {
	case err != nil:
		return fail(check, "see runtime", "looking for image %s: %v", image, err)
	case !found:
		return fail(check, fmt.Sprintf("build it ('make image'), pull or load it ('%s pull %s'), or set sandbox.image to one that is there", rt.Bin, image),
			"image %s is not among %s's images (hostd run does not pull)", image, rt.Bin)
	}
	got, how, err := agentBuild(ctx, rt, image, agent)
	if err != nil {
		return warn(check, "check that sandbox.agent is gt-agent's path in the image", "image %s: gt-agent's version cannot be told: %v", image, err)
	}
	if !sameBuild(got, hostd) {
		return warn(check, "rebuild the image from this hostd's tree ('make image') and set sandbox.image to it, or run the hostd that came with it",
			"image %s has gt-agent %s %s; hostd is %s", image, short(got), how, short(hostd))
	}
	return ok(check, "image %s has gt-agent %s, as hostd, %s", image, short(got), how)
}

// agentBuild is what the image says of its gt-agent's build: its labels
// when they name one, else what the gt-agent in it says.
func agentBuild(ctx context.Context, rt sandbox.CLI, image, agent string) (b cli.Build, how string, err error) {
	format := fmt.Sprintf(`{{index .Config.Labels %q}}{{"\t"}}{{index .Config.Labels %q}}`, versionLabel, revisionLabel)
	if out, err := runtimeOutput(ctx, rt, runtimeTimeout, "image", "inspect", "--format", format, image); err == nil {
		v, r, _ := strings.Cut(strings.TrimSpace(strings.ReplaceAll(out, "<no value>", "")), "\t")
		if b := (cli.Build{Version: v, Revision: r}); (v != "" && v != "dev") || known(r) {
			return b, "by its labels", nil
		}
	}
	out, err := runtimeOutput(ctx, rt, agentTimeout, "run", "--rm", "--network", "none", "--entrypoint", agent, image, "version", "--json")
	if err != nil {
		return b, "", err
	}
	if err := json.Unmarshal([]byte(out), &b); err != nil || b.Version == "" {
		return b, "", fmt.Errorf("'%s version --json' printed %q", agent, strings.TrimSpace(out))
	}
	return b, "by its own word", nil
}

// runtimeOutput runs the runtime with args within timeout and returns its
// standard output, bounded; its error carries its standard error.
func runtimeOutput(ctx context.Context, rt sandbox.CLI, timeout time.Duration, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd, err := rt.Command(ctx, args...)
	if err != nil {
		return "", err
	}
	out, errb := &sandbox.Capped{Max: 64 << 10}, &sandbox.Capped{Max: 4 << 10}
	cmd.Stdout, cmd.Stderr = out, errb
	if err := cmd.Run(); err != nil {
		msg, _, _ := strings.Cut(strings.TrimSpace(errb.String()), "\n")
		return "", fmt.Errorf("%s %s: %w: %s", rt.Bin, args[0], err, msg)
	}
	return out.String(), nil
}

// sameBuild says whether a and b are one build: the same commit when both
// know theirs, else the same version.
func sameBuild(a, b cli.Build) bool {
	if known(a.Revision) && known(b.Revision) {
		return a.Revision == b.Revision
	}
	return a.Version == b.Version
}

// known says whether a revision names a commit.
func known(rev string) bool { return rev != "" && rev != "unknown" }

// short is a build as a version and the start of its commit.
func short(b cli.Build) string {
	if !known(b.Revision) {
		return b.Version
	}
	return fmt.Sprintf("%s (commit %.12s)", b.Version, b.Revision)
}
