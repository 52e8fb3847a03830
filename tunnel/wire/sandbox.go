package wire

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// The sandbox channel (KindSandbox, hostd -> agent) is what hostd run
// does in a polecat's sandbox once its agent is up, one operation a
// stream: no metadata; hostd writes a SandboxRequest as one JSON line (at
// most MaxSandboxRequest bytes) and keeps its side open while it wants
// the answers, SandboxAnswer lines. docs/protocol.md, "Sandbox (sandbox)".
const (
	// SandboxPrepare: clone the rig through the agent's git port when
	// there is no clone, bring the clone to Branch, set the git identity;
	// answered SandboxPrepared.
	SandboxPrepare = "prepare"
	// SandboxSession: start Command tagged Tag in the clone (unless the
	// session tagged Tag is there already); answered SandboxStarted,
	// then how it ended.
	SandboxSession = "session"
	// SandboxWait: how the session tagged Tag ends (the stream that
	// started it broke): answered once it ends, or at once when it is not
	// there (SandboxGone) or was replaced.
	SandboxWait = "wait"
	// SandboxStop: end the session tagged Tag if it is still the one
	// there; answered SandboxStopped, or SandboxGone when it is not.
	SandboxStop = "stop"
)

// The statuses of the agent's answers.
const (
	// SandboxPrepared: the clone is ready (SandboxAnswer.Clone).
	SandboxPrepared = "prepared"
	// SandboxStarted: the session runs.
	SandboxStarted = "started"
	// SandboxExited: the session's command exited with Code.
	SandboxExited = "exited"
	// SandboxGone: no session tagged so is there, or it ended without an
	// exit status (killed from outside).
	SandboxGone = "gone"
	// SandboxReplaced: a later session, of another tag, replaced it.
	SandboxReplaced = "replaced"
	// SandboxStopped: the session was ended.
	SandboxStopped = "stopped"
	// SandboxFailed: the operation failed, Error says why.
	SandboxFailed = "failed"
)

// Limits of the sandbox channel.
const (
	// MaxSandboxRequest bounds hostd's request (a session's command and
	// environment values travel in it).
	MaxSandboxRequest = 1 << 20
	// MaxSandboxAnswer bounds one of the agent's answers.
	MaxSandboxAnswer = 4 << 10
	// MaxSandboxAnswers bounds the answers on one stream.
	MaxSandboxAnswers = 4
	// MaxSandboxText bounds each name in an answer (a branch, a stash,
	// the clone's directory).
	MaxSandboxText = 512
)

// SandboxRequest is hostd's request on a sandbox stream.
type SandboxRequest struct {
	// Op is SandboxPrepare, SandboxSession, SandboxWait or SandboxStop.
	Op string `json:"op"`
	// Branch (prepare) is the branch Gas Town checked out in the
	// polecat's worktree, "" for a detached HEAD: the clone stays as it is.
	Branch string `json:"branch,omitempty"`
	// Name and Email (prepare) are the clone's git identity ("" leaves
	// the one there).
	Name  string `json:"name,omitempty"`
	Email string `json:"email,omitempty"`
	// Tag names the session (session, wait, stop): letters, digits, '-'
	// and '_', at most 64.
	Tag string `json:"tag,omitempty"`
	// Command (session) is Gas Town's command line for the session.
	Command []string `json:"command,omitempty"`
	// Env (session) is the session's variables, NAME=value each.
	Env []string `json:"env,omitempty"`
}

// Validate checks a request as the agent receives it; the session's tag
// and variables are checked where they are used (agent/liveness).
func (r SandboxRequest) Validate() error {
	switch r.Op {
	case SandboxPrepare:
		if strings.HasPrefix(r.Branch, "-") {
			return fmt.Errorf("sandbox: branch %q reads as an option", r.Branch)
		}
		return nil
	case SandboxSession:
		if len(r.Command) == 0 || r.Command[0] == "" {
			return errors.New("sandbox: a session needs its command")
		}
	case SandboxWait, SandboxStop:
	default:
		return fmt.Errorf("sandbox: unknown operation %q (prepare, session, wait, stop)", r.Op)
	}
	if r.Tag == "" {
		return fmt.Errorf("sandbox: %s needs the session's tag", r.Op)
	}
	return nil
}

// WriteSandboxRequest writes r as its JSON line.
func WriteSandboxRequest(w io.Writer, r SandboxRequest) error {
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("sandbox: encoding the request: %w", err)
	}
	if len(b) >= MaxSandboxRequest {
		return fmt.Errorf("sandbox: the request is %d bytes, limit %d", len(b), MaxSandboxRequest)
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// ReadSandboxRequest reads and checks hostd's request.
func ReadSandboxRequest(r io.Reader) (SandboxRequest, error) {
	var req SandboxRequest
	d := json.NewDecoder(io.LimitReader(r, MaxSandboxRequest))
	d.DisallowUnknownFields()
	if err := d.Decode(&req); err != nil {
		return req, fmt.Errorf("sandbox: reading the request: %w", err)
	}
	return req, req.Validate()
}

// SandboxClone is what prepare did to the clone.
type SandboxClone struct {
	// Dir is the clone, in the container.
	Dir string `json:"dir"`
	// Cloned is true when prepare made the clone (on Branch).
	Cloned bool `json:"cloned,omitempty"`
	// From and To are the clone's branch before and after ("" for a
	// detached HEAD); equal when it was on the branch already.
	From string `json:"from,omitempty"`
	To   string `json:"to,omitempty"`
	// Stash names the stash entry holding the uncommitted work found on
	// From, "" for none.
	Stash string `json:"stash,omitempty"`
	// Unpushed is how many commits of From (or of the detached HEAD) no
	// branch on origin has: they stay on From, or on Kept.
	Unpushed int `json:"unpushed,omitempty"`
	// Kept is the branch made for a detached HEAD's commits origin
	// lacks, "" for none.
	Kept string `json:"kept,omitempty"`
}

// SandboxAnswer is one of the agent's answers.
type SandboxAnswer struct {
	// Status is one of the Sandbox statuses above.
	Status string `json:"status"`
	// Code is the session's exit status (SandboxExited): 0-255.
	Code int `json:"code,omitempty"`
	// Error says why (SandboxFailed).
	Error string `json:"error,omitempty"`
	// Clone is what prepare did (SandboxPrepared).
	Clone *SandboxClone `json:"clone,omitempty"`
}

// WriteSandboxAnswer writes a as its JSON line, its error cut to
// MaxReasonLen.
func WriteSandboxAnswer(w io.Writer, a SandboxAnswer) error {
	a.Error = TruncateReason(a.Error)
	return json.NewEncoder(w).Encode(a)
}

// SandboxAnswers reads the agent's answers on a sandbox stream.
type SandboxAnswers struct {
	d *json.Decoder
	n int
}

// NewSandboxAnswers reads answers from r, at most MaxSandboxAnswers of
// at most MaxSandboxAnswer bytes.
func NewSandboxAnswers(r io.Reader) *SandboxAnswers {
	d := json.NewDecoder(io.LimitReader(r, MaxSandboxAnswers*MaxSandboxAnswer))
	d.DisallowUnknownFields()
	return &SandboxAnswers{d: d}
}

// Next is the next answer, checked; io.EOF when the stream ends first.
func (r *SandboxAnswers) Next() (SandboxAnswer, error) {
	var a SandboxAnswer
	if r.n++; r.n > MaxSandboxAnswers {
		return a, fmt.Errorf("reading the sandbox's answer: more than %d answers", MaxSandboxAnswers)
	}
	if err := r.d.Decode(&a); err != nil {
		if errors.Is(err, io.EOF) {
			return a, io.EOF
		}
		return a, fmt.Errorf("reading the sandbox's answer: %w", err)
	}
	if err := a.check(); err != nil {
		return a, fmt.Errorf("reading the sandbox's answer: %w", err)
	}
	return a, nil
}

// check refuses an answer that is not one of the statuses, carries what
// its status does not, or names anything longer than the limits.
func (a SandboxAnswer) check() error {
	switch a.Status {
	case SandboxPrepared, SandboxStarted, SandboxExited, SandboxGone, SandboxReplaced, SandboxStopped, SandboxFailed:
	default:
		return fmt.Errorf("unknown status %q", a.Status)
	}
	p := a.Clone
	switch {
	case a.Code < 0 || a.Code > 255 || a.Code != 0 && a.Status != SandboxExited:
		return fmt.Errorf("exit status %d", a.Code)
	case len(a.Error) > MaxReasonLen || a.Error != "" && a.Status != SandboxFailed:
		return errors.New("an error that does not fit")
	case (p != nil) != (a.Status == SandboxPrepared):
		return errors.New("what prepare did, with another status or missing")
	case p == nil:
		return nil
	case p.Unpushed < 0:
		return fmt.Errorf("%d commits", p.Unpushed)
	}
	for _, s := range []string{p.Dir, p.From, p.To, p.Stash, p.Kept} {
		if len(s) > MaxSandboxText {
			return fmt.Errorf("a name of %d bytes, limit %d", len(s), MaxSandboxText)
		}
	}
	return nil
}
