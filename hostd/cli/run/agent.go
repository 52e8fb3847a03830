package run

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/polecat-sidecar/sidecar/hostd/api"
	"github.com/polecat-sidecar/sidecar/hostd/sandbox"
	"github.com/polecat-sidecar/sidecar/internal/termsafe"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// How hostd run waits for a sandbox's agent: each ask of hostd serve
// waits agentPoll, then hostd run looks at the sandbox and says it still
// waits; a start gives the agent agentWait, and a problem the runtime
// names (a pod that cannot be scheduled) problemLimit.
const (
	agentPoll    = 5 * time.Second
	agentWait    = 5 * time.Minute
	problemLimit = 20 * time.Second
)

// connect opens a sandbox stream to id's agent through hostd serve. With
// a limit it waits up to limit for a sandbox just made or started to run
// and its agent to connect, and progress says every agentPoll that it
// waits, and why when the runtime says; without, for as long as the
// sandbox runs. A sandbox that ran and stopped with no reason ends the
// wait at once; one whose runtime names a reason (which may pass: a pod
// not scheduled yet), once that has stayed for problemLimit.
func (o *runOptions) connect(ctx context.Context, rt sandbox.Runtime, id wire.Identity, limit time.Duration, progress io.Writer) (io.ReadWriteCloser, error) {
	name, start, ran := sandbox.Name(id), time.Now(), limit == 0
	var problemSince time.Time
	for {
		info, err := rt.Inspect(ctx, name)
		problem := info.Problem
		switch {
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case err != nil:
			problem = err.Error()
		case !info.Exists:
			return nil, fmt.Errorf("the sandbox %s is gone", name)
		case info.Running:
			ran = true
		case problem == "" && ran:
			return nil, o.stopped(id, limit, problem)
		}
		switch {
		case problem == "":
			problemSince = time.Time{}
		case problemSince.IsZero():
			problemSince = time.Now()
		case time.Since(problemSince) < problemLimit:
		case ran:
			return nil, o.stopped(id, limit, problem)
		default:
			return nil, fmt.Errorf("the sandbox %s does not start: %s", name, problem)
		}
		if limit > 0 && time.Since(start) >= limit {
			return nil, fmt.Errorf("the agent of %s did not connect to hostd within %v%s", id, limit, why(problem))
		}
		conn, err := o.Client().Sandbox(ctx, api.Identity(id), agentPoll)
		switch {
		case err == nil:
			return conn, nil
		case errors.Is(err, api.ErrNotRunning): // hostd serve restarting
			if err := sleep(ctx, agentPoll); err != nil {
				return nil, err
			}
		case !errors.Is(err, api.ErrNotConnected):
			return nil, err
		}
		fmt.Fprintf(progress, "hostd run: waiting for the agent of %s to connect%s\n", id, termsafe.Line(why(problem)))
	}
}

// stopped is the error for id's sandbox that ran and stopped, for the
// runtime's reason problem: before its agent connected (limit > 0), or
// under a session.
func (o *runOptions) stopped(id wire.Identity, limit time.Duration, problem string) error {
	if limit > 0 {
		return fmt.Errorf("the sandbox %s stopped before its agent connected%s: can it reach hostd at %s?", sandbox.Name(id), why(problem), o.spec.URL)
	}
	return fmt.Errorf("the sandbox %s is not running%s", sandbox.Name(id), why(problem))
}

// why is a runtime's reason in parentheses, or nothing.
func why(problem string) string {
	if problem == "" {
		return ""
	}
	return " (" + problem + ")"
}

// sleep waits d, or less if ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// exchange is one request on a sandbox stream and its answers.
type exchange struct {
	conn    io.ReadWriteCloser
	stop    func() bool
	answers *wire.SandboxAnswers
}

// send writes req on conn, a sandbox stream, which ctx ending closes.
func send(ctx context.Context, conn io.ReadWriteCloser, req wire.SandboxRequest) (*exchange, error) {
	x := &exchange{conn: conn, stop: context.AfterFunc(ctx, func() { conn.Close() }), answers: wire.NewSandboxAnswers(conn)}
	if err := wire.WriteSandboxRequest(conn, req); err != nil {
		x.Close()
		return nil, fmt.Errorf("sending the %s request: %w", req.Op, err)
	}
	return x, nil
}

// Close closes the stream.
func (x *exchange) Close() {
	x.stop()
	x.conn.Close()
}

// next is the next answer; a failure's error is the agent's reason.
func (x *exchange) next() (wire.SandboxAnswer, error) {
	a, err := x.answers.Next()
	if err == nil && a.Status == wire.SandboxFailed {
		err = &agentError{a.Error}
	}
	return a, err
}

// agentError is what the agent said went wrong: an answer, not a broken
// stream.
type agentError struct{ reason string }

func (e *agentError) Error() string { return e.reason }

// maxBreaks is how many times in a row a sandbox stream may break before
// an answer before hostd run gives up on it.
const maxBreaks = 3
