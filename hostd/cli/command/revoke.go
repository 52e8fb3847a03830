package command

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/polecat-sidecar/sidecar/hostd/api"
)

// Applied is what a running hostd did on hearing of new revocations.
type Applied struct {
	// HostdRunning says whether a hostd answered; if not, the
	// revocation applies when it starts.
	HostdRunning bool `json:"hostd_running"`
	// ClosedTunnels counts the live tunnels it closed.
	ClosedTunnels int `json:"closed_tunnels"`
}

// ApplyRevocations tells a running hostd to apply the revocations now:
// hostd cert revoke, and hostd nuke.
func (a *App) ApplyRevocations(ctx context.Context) (Applied, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	n, err := a.Client().ReloadRevocations(ctx)
	switch {
	case errors.Is(err, api.ErrNotRunning):
		return Applied{}, nil
	case err != nil:
		return Applied{}, fmt.Errorf("revocation recorded, but telling hostd failed: %w", err)
	}
	return Applied{HostdRunning: true, ClosedTunnels: n}, nil
}

// Print says what the running hostd did, or that none runs.
func (r Applied) Print(out io.Writer) {
	if !r.HostdRunning {
		fmt.Fprintln(out, "hostd is not running; the revocation applies when it starts")
		return
	}
	fmt.Fprintf(out, "closed %d live tunnel(s)\n", r.ClosedTunnels)
}
