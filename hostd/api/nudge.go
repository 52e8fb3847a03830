package api

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"time"
)

// NudgeItem is one queued nudge, as hostd nudge --list shows it.
type NudgeItem struct {
	ID       string    `json:"id"`
	Polecat  Identity  `json:"polecat"`
	Text     string    `json:"text"`
	Mode     string    `json:"mode"`
	Priority string    `json:"priority"`
	Created  time.Time `json:"created"`
	Expires  time.Time `json:"expires"`
	// Attempts counts delivery attempts; Why says why the last did not
	// deliver it (busy, not connected, ...).
	Attempts int    `json:"attempts"`
	Why      string `json:"why,omitempty"`
}

// NudgeOutcome is what became of a nudge.
type NudgeOutcome struct {
	ID      string   `json:"id"`
	Polecat Identity `json:"polecat"`
	// Outcome is submitted, failed, queued, expired, cancelled or
	// dropped.
	Outcome string    `json:"outcome"`
	At      time.Time `json:"at"`
	// Detail is the agent's evidence of submission, or why not.
	Detail string `json:"detail,omitempty"`
	// Expires is when a queued nudge expires.
	Expires time.Time `json:"expires,omitzero"`
	// Dropped is the nudge a full queue let go to take this one.
	Dropped *NudgeOutcome `json:"dropped,omitempty"`
}

// NudgeRequest asks hostd to nudge a polecat.
type NudgeRequest struct {
	Text string `json:"text"`
	// Mode is immediate, wait-idle (the default) or queue.
	Mode string `json:"mode,omitempty"`
	// Priority is normal (the default) or urgent.
	Priority string `json:"priority,omitempty"`
	// TTL overrides the priority's time to live.
	TTL time.Duration `json:"ttl,omitempty"`
	// Wait is how long to wait for the outcome (0: answer once it is
	// persisted, as queued).
	Wait time.Duration `json:"wait,omitempty"`
}

// Nudge queues a nudge and waits (up to req.Wait) for its outcome.
func (c *Client) Nudge(ctx context.Context, id Identity, req NudgeRequest) (NudgeOutcome, error) {
	var o NudgeOutcome
	err := c.doLongJSON(ctx, http.MethodPost, "/v1/nudges/"+id.Rig+"/"+id.Name, req, &o)
	return o, err
}

// NudgeList is a polecat's queue.
func (c *Client) NudgeList(ctx context.Context, id Identity) ([]NudgeItem, error) {
	var items []NudgeItem
	err := c.do(ctx, http.MethodGet, "/v1/nudges/"+id.Rig+"/"+id.Name, &items)
	return items, err
}

// NudgeCancel removes a queued nudge.
func (c *Client) NudgeCancel(ctx context.Context, nudgeID string) (NudgeOutcome, error) {
	var o NudgeOutcome
	if nudgeID == "" {
		return o, errors.New("which nudge? give its id (hostd nudge --list shows them)")
	}
	err := c.do(ctx, http.MethodDelete, "/v1/nudges/"+url.PathEscape(nudgeID), &o)
	return o, err
}
