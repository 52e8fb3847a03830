package sandbox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// Reaper removes the sandboxes of polecats Gas Town has nuked. Gas Town
// removes a polecat's directory <town>/<rig>/polecats/<name> when it
// nukes it (gt done's self-nuke, gt polecat nuke) and at no other time;
// a session cycle leaves it. So a sandbox whose polecat directory has
// been missing on two passes in a row, or made anew (another Home: Gas
// Town gave the name to its next polecat), is removed, its polecat's
// certificates revoked, and what hostd keeps of it forgotten.
type Reaper struct {
	// Town is the Gas Town root.
	Town string
	// Runtime lists and removes the sandboxes.
	Runtime Runtime
	// Interval is the time between passes.
	Interval time.Duration
	// Revoke revokes the polecat's certificates and closes its tunnels.
	Revoke func(wire.Identity) error
	// Forget removes what hostd keeps of the polecat once its sandbox is
	// removed (server.Server.Forget).
	Forget func(context.Context, wire.Identity) error
	// Logger receives what the reaper does.
	Logger *slog.Logger

	missing map[string]bool // sandboxes whose polecat was missing last pass
}

// Run makes a pass every Interval until ctx ends. Without the runtime's
// CLI it says so once and stops.
func (r *Reaper) Run(ctx context.Context) {
	t := time.NewTicker(r.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := r.Pass(ctx); errors.Is(err, ErrNoRuntime) {
			r.Logger.Info("no container runtime: sandboxes of nuked polecats are not removed", "runtime", r.Runtime.Name())
			return
		} else if err != nil && ctx.Err() == nil {
			r.Logger.Warn("looking for the sandboxes of nuked polecats failed", "err", err)
		}
	}
}

// Pass removes the sandboxes whose polecat directory is missing now and
// was on the pass before.
func (r *Reaper) Pass(ctx context.Context) error {
	list, err := r.Runtime.List(ctx, r.Town)
	if err != nil {
		return err
	}
	missing := map[string]bool{}
	for _, sb := range list {
		if polecatExists(r.Town, sb) {
			continue
		}
		if !r.missing[sb.ID] {
			missing[sb.ID] = true
			continue
		}
		// By its ID, once more: hostd run of the polecat's successor may
		// have just replaced it with a sandbox of its own of that name.
		if info, err := r.Runtime.Inspect(ctx, sb.ID); err != nil || !info.Exists {
			continue
		}
		if err := Nuke(ctx, r.Runtime, sb.ID, sb.Polecat, r.Revoke); err != nil {
			r.Logger.Warn("removing the sandbox of a nuked polecat failed", "polecat", sb.Polecat, "container", sb.Name, "err", err)
			missing[sb.ID] = true
			continue
		}
		if err := r.Forget(ctx, sb.Polecat); err != nil {
			r.Logger.Warn("removed the sandbox of a nuked polecat and revoked its certificates; forgetting what hostd keeps of it failed: run 'hostd forget'",
				"polecat", sb.Polecat, "container", sb.Name, "err", err)
			continue
		}
		r.Logger.Info("removed the sandbox of a nuked polecat, revoked its certificates and forgot what hostd kept of it", "polecat", sb.Polecat, "container", sb.Name)
	}
	r.missing = missing
	return nil
}

// polecatExists says whether Gas Town's directory of sandbox sb's
// polecat is there in town, the one sb was made for; an error other
// than its absence counts as there.
func polecatExists(town string, sb Sandbox) bool {
	home, err := Home(town, sb.Polecat)
	return err != nil || home != "" && SameHome(sb.Home, home)
}

// Nuke revokes a polecat's certificates, so that nothing it kept can
// reach hostd again, and removes its sandbox (container name).
func Nuke(ctx context.Context, rt Runtime, name string, id wire.Identity, revoke func(wire.Identity) error) error {
	if err := revoke(id); err != nil {
		return fmt.Errorf("revoking the certificates of %s: %w", id, err)
	}
	if err := rt.Remove(ctx, name); err != nil {
		return fmt.Errorf("removing the sandbox of %s: %w", id, err)
	}
	return nil
}
