package api

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"
)

// SandboxUpgrade is the protocol the sandbox channel's connection
// upgrades to: hostd run's request one way, the agent's answers the other
// (wire.SandboxRequest).
const SandboxUpgrade = "polecat-sandbox"

// ErrNotConnected is the answer when a polecat's agent is not connected
// within the wait asked for.
var ErrNotConnected = errors.New("the polecat's agent has not connected")

// Sandbox opens a sandbox stream to the polecat's agent, waiting up to
// wait for it to connect (an error wrapping ErrNotConnected when it does
// not): write one request to it, read the agent's answers from it.
func (c *Client) Sandbox(ctx context.Context, id Identity, wait time.Duration) (io.ReadWriteCloser, error) {
	conn, err := c.upgrade(ctx, fmt.Sprintf("/v1/sandbox/%s/%s?wait=%s", id.Rig, id.Name, wait), SandboxUpgrade, "open "+id.String()+"'s sandbox channel")
	if refused, ok := errors.AsType[*Error](err); ok && refused.Status == http.StatusGatewayTimeout {
		return nil, fmt.Errorf("%w (hostd waited %v for %s's)", ErrNotConnected, wait, id)
	}
	return conn, err
}
