package wire

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
)

// The sandbox channel (KindSandbox, hostd -> agent): what hostd run does
// in a polecat's sandbox once its agent is up, one operation a stream, no
// metadata. hostd writes a SandboxRequest as a JSON line and keeps its
// side open while it wants the answers, SandboxAnswer lines; the session
// outlives its stream. docs/protocol.md, "Sandbox (sandbox)".
const (
	SandboxPrepare  = "prepare"  // clone if need be, to Branch, git identity: prepared
	SandboxSession  = "session"  // start Command tagged Tag (once): started, then its end
	SandboxWait     = "wait"     // the end of the session tagged Tag, or gone/replaced at once
	SandboxStop     = "stop"     // end the session tagged Tag if it is there: stopped, or gone
	SandboxPrepared = "prepared" // the clone is ready (SandboxAnswer.Clone)
	SandboxStarted  = "started"  // the session runs
	SandboxExited   = "exited"   // its command exited with Code
	SandboxGone     = "gone"     // no such session, or it ended with no status (killed)
	SandboxReplaced = "replaced" // a later session, of another tag, replaced it
	SandboxStopped  = "stopped"  // the session was ended
	SandboxFailed   = "failed"   // the operation failed: Error
	// Limits: hostd's request (a session's command and variables travel in
	// it), the agent's answers and each name in them (branches, paths).
	MaxSandboxRequest = 1 << 20
	MaxSandboxAnswer  = 4 << 10
	MaxSandboxAnswers = 4
	MaxSandboxText    = 512
)

// SandboxRequest is hostd's request: its Op; for prepare the worktree's
// Branch ("" for a detached HEAD) and the clone's git identity (Name,
// Email; "" for none); the session's Tag (session, wait, stop); for a
// session Gas Town's Command and its variables (Env, NAME=value each).
type SandboxRequest struct {
	Op      string   `json:"op"`
	Branch  string   `json:"branch,omitempty"`
	Name    string   `json:"name,omitempty"`
	Email   string   `json:"email,omitempty"`
	Tag     string   `json:"tag,omitempty"`
	Command []string `json:"command,omitempty"`
	Env     []string `json:"env,omitempty"`
}

// Validate checks a request as the agent receives it; the session's tag
// and variables are checked where they are used (agent/liveness).
func (r SandboxRequest) Validate() error {
	switch {
	case r.Op == SandboxPrepare && strings.HasPrefix(r.Branch, "-"):
		return fmt.Errorf("sandbox: branch %q reads as an option", r.Branch)
	case r.Op == SandboxPrepare:
		return nil
	case r.Op != SandboxSession && r.Op != SandboxWait && r.Op != SandboxStop:
		return fmt.Errorf("sandbox: unknown operation %q (prepare, session, wait, stop)", r.Op)
	case r.Tag == "":
		return fmt.Errorf("sandbox: %s needs the session's tag", r.Op)
	case r.Op == SandboxSession && (len(r.Command) == 0 || r.Command[0] == ""):
		return errors.New("sandbox: a session needs its command")
	}
	return nil
}

// WriteSandboxRequest writes r as its JSON line.
func WriteSandboxRequest(w io.Writer, r SandboxRequest) error {
	b, err := json.Marshal(r)
	if err != nil || len(b) >= MaxSandboxRequest {
		return fmt.Errorf("sandbox: a request of %d bytes, limit %d (%v)", len(b), MaxSandboxRequest, err)
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// ReadSandboxRequest reads and checks hostd's request.
func ReadSandboxRequest(r io.Reader) (SandboxRequest, error) {
	return newAnswers(r, 1, MaxSandboxRequest, "sandbox request", SandboxRequest.Validate).Next()
}

// SandboxClone is what prepare did: the clone's Dir, made now (Cloned),
// or moved From a branch To another ("" for a detached HEAD), the work
// found there in the stash entry Stash, Unpushed commits origin lacks
// left on From or, for a detached HEAD, kept on branch Kept.
type SandboxClone struct {
	Dir      string `json:"dir"`
	Cloned   bool   `json:"cloned,omitempty"`
	From     string `json:"from,omitempty"`
	To       string `json:"to,omitempty"`
	Stash    string `json:"stash,omitempty"`
	Unpushed int    `json:"unpushed,omitempty"`
	Kept     string `json:"kept,omitempty"`
}

// SandboxAnswer is one of the agent's answers: its Status, a session's
// exit Code (0-255), a failure's Error, what prepare did (Clone).
type SandboxAnswer struct {
	Status string        `json:"status"`
	Code   int           `json:"code,omitempty"`
	Error  string        `json:"error,omitempty"`
	Clone  *SandboxClone `json:"clone,omitempty"`
}

// WriteSandboxAnswer writes a as its JSON line, its error cut to MaxReasonLen.
func WriteSandboxAnswer(w io.Writer, a SandboxAnswer) error {
	a.Error = TruncateReason(a.Error)
	return json.NewEncoder(w).Encode(a)
}

// SandboxAnswers reads the agent's answers on a sandbox stream.
type SandboxAnswers = Answers[SandboxAnswer]

// NewSandboxAnswers reads answers from r, within the limits above.
func NewSandboxAnswers(r io.Reader) *SandboxAnswers {
	return newAnswers(r, MaxSandboxAnswers, MaxSandboxAnswer, "sandbox's answer", SandboxAnswer.check)
}

// check refuses unknown statuses, what a status does not carry, excess.
func (a SandboxAnswer) check() error {
	c := a.Clone
	switch {
	case !slices.Contains([]string{SandboxPrepared, SandboxStarted, SandboxExited, SandboxGone, SandboxReplaced, SandboxStopped, SandboxFailed}, a.Status):
		return fmt.Errorf("unknown status %q", a.Status)
	case a.Code < 0 || a.Code > 255 || a.Code != 0 && a.Status != SandboxExited:
		return fmt.Errorf("exit status %d", a.Code)
	case len(a.Error) > MaxReasonLen || a.Error != "" && a.Status != SandboxFailed:
		return errors.New("an error that does not fit")
	case (c != nil) != (a.Status == SandboxPrepared):
		return errors.New("what prepare did, with another status or missing")
	case c != nil && c.Unpushed < 0:
		return fmt.Errorf("%d commits", c.Unpushed)
	case c != nil && max(len(c.Dir), len(c.From), len(c.To), len(c.Stash), len(c.Kept)) > MaxSandboxText:
		return fmt.Errorf("a name over %d bytes", MaxSandboxText)
	}
	return nil
}
