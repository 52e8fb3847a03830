package wire

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"
)

// The nudge channel (KindNudge, hostd -> agent), one nudge a stream: a
// NudgeRequest as metadata, then the text (Size bytes, at most
// MaxNudgeText), hostd's side open while it wants the nudge. The agent
// types it into the pane (once idle unless NudgeImmediate, never past
// Deadline) and answers NudgeResult lines, the last the outcome; hostd
// resends until a final one, so the agent answers a repeated ID with the
// first outcome. docs/protocol.md, "Nudges (nudge)".
const (
	// NudgeImmediate types the nudge now, busy or not (never into text
	// someone is typing).
	NudgeImmediate = "immediate"
	// NudgeWaitIdle types it once the polecat is idle (the default).
	NudgeWaitIdle = "wait-idle"
	// NudgeQueue is wait-idle without the caller waiting: hostd answers
	// once the nudge is persisted. The agent never sees this mode.
	NudgeQueue = "queue"
)

// Nudge outcomes.
const (
	// NudgeSubmitted: typed and submitted, with evidence (NudgeResult.Detail).
	NudgeSubmitted = "submitted"
	// NudgeBusy: the polecat was not idle before the deadline; nothing
	// was typed and hostd keeps the nudge queued.
	NudgeBusy = "busy"
	// NudgeFailed: not delivered, with why; final.
	NudgeFailed = "failed"

	// The outcomes hostd adds to the agent's, as its API and CLI report
	// them; the agent never sends these.

	// NudgeQueued: persisted in hostd's queue, not typed yet.
	NudgeQueued = "queued"
	// NudgeExpired: its time to live ran out before it could be typed.
	NudgeExpired = "expired"
	// NudgeCancelled: an operator removed it from the queue.
	NudgeCancelled = "cancelled"
	// NudgeDropped: pushed out of a full queue by a newer nudge.
	NudgeDropped = "dropped"
)

// Limits of the nudge channel.
const (
	// MaxNudgeText bounds a nudge's text.
	MaxNudgeText = 64 << 10
	// MaxNudgeResult bounds one of the agent's answers.
	MaxNudgeResult = 4 << 10
	// MaxNudgeResults bounds the answers on one stream.
	MaxNudgeResults = 64
)

// NudgeRequest is a nudge stream's metadata.
type NudgeRequest struct {
	// ID is hostd's id for the nudge, the same on every attempt.
	ID string `json:"id"`
	// Mode is NudgeImmediate or NudgeWaitIdle.
	Mode string `json:"mode"`
	// Deadline is when the agent stops waiting and answers NudgeBusy.
	Deadline time.Time `json:"deadline"`
	// Size is the text's length in bytes.
	Size int `json:"size"`
}

// Validate checks a request as the agent receives it.
func (r NudgeRequest) Validate() error {
	switch {
	case r.ID == "" || len(r.ID) > 64:
		return errors.New("nudge: the id must be 1-64 bytes")
	case r.Mode != NudgeImmediate && r.Mode != NudgeWaitIdle:
		return fmt.Errorf("nudge: unknown mode %q (immediate, wait-idle)", r.Mode)
	case r.Deadline.IsZero():
		return errors.New("nudge: no deadline")
	case r.Size <= 0 || r.Size > MaxNudgeText:
		return fmt.Errorf("nudge: the text must be 1-%d bytes", MaxNudgeText)
	}
	return nil
}

// NudgeResult is the agent's answer to a nudge.
type NudgeResult struct {
	// Outcome is NudgeSubmitted, NudgeBusy or NudgeFailed.
	Outcome string `json:"outcome"`
	// At is when it was submitted (or given up), by the agent's clock:
	// hostd records its own time of hearing instead, and shows that.
	At time.Time `json:"at"`
	// Detail says what was seen: the evidence of submission, or why not.
	Detail string `json:"detail,omitempty"`
	// Repeat is true when the nudge had already been delivered and this
	// is that delivery's outcome; nothing was typed this time.
	Repeat bool `json:"repeat,omitempty"`
}

// WriteNudgeResult writes r.
func WriteNudgeResult(w io.Writer, r NudgeResult) error {
	return json.NewEncoder(w).Encode(r)
}

// NudgeResults reads the agent's answers on a nudge stream.
type NudgeResults = Answers[NudgeResult]

// NewNudgeResults reads results from r, at most MaxNudgeResults of at
// most MaxNudgeResult bytes.
func NewNudgeResults(r io.Reader) *NudgeResults {
	return newAnswers(r, MaxNudgeResults, MaxNudgeResult, "nudge result", NudgeResult.check)
}

// check refuses an unknown outcome and an oversized detail.
func (res NudgeResult) check() error {
	switch {
	case res.Outcome != NudgeSubmitted && res.Outcome != NudgeBusy && res.Outcome != NudgeFailed:
		return fmt.Errorf("unknown outcome %q", res.Outcome)
	case len(res.Detail) > MaxNudgeResult:
		return errors.New("its detail is too long")
	}
	return nil
}

// ReadNudgeText reads a nudge's text: the request's Size bytes.
func ReadNudgeText(r io.Reader, req NudgeRequest) (string, error) {
	b := make([]byte, req.Size)
	if _, err := io.ReadFull(r, b); err != nil {
		return "", fmt.Errorf("reading the nudge: %w", err)
	}
	return string(b), nil
}
