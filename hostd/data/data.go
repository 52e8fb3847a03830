// Package data is hostd's half of the data channel: it sends a polecat's
// whitelisted data (its data root on the host) into the container when
// the agent first asks and on hostd sync push, takes the container's back
// on hostd sync pull and on the agent's uploads (teardown, checkpoints),
// merges it into the host's tree against what it last sent (package sync
// does the packing, the checks and the merge), keeps that base per
// polecat, and journals every transfer (package journal).
//
// After each push it also sends the files the polecat's rig shares with
// all its polecats (its rig root, Gas Town's <rig>/polecats: Claude Code's
// settings, commands and hooks in .claude), read-only: Claude Code
// settings go with their hook commands rewritten to run the container's
// gt and bd (package sync/claude), and nothing from a container is ever
// written there, since those files run as hooks in every polecat of the
// rig, on the host too.
package data

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	gosync "sync"
	"sync/atomic"
	"time"

	"github.com/polecat-sidecar/sidecar/hostd/api"

	"github.com/polecat-sidecar/sidecar/hostd/limits"
	"github.com/polecat-sidecar/sidecar/hostd/registry"
	"github.com/polecat-sidecar/sidecar/hostd/state"
	"github.com/polecat-sidecar/sidecar/internal/logging"
	"github.com/polecat-sidecar/sidecar/internal/settings"
	datasync "github.com/polecat-sidecar/sidecar/sync"
	"github.com/polecat-sidecar/sidecar/sync/archive"
	"github.com/polecat-sidecar/sidecar/tunnel"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// Service is safe for concurrent use.
type Service struct {
	cfg       Config
	policy    datasync.Policy // a polecat's own data
	rigPolicy datasync.Policy // its rig's read-only files
	reg       *registry.Registry
	log       *slog.Logger

	metrics    *metrics
	conflicts  atomic.Int64     // conflicts since hostd started, for status
	rate       *limits.Rate     // agent-initiated transfers, per polecat
	logLimit   *logging.Limiter // refusals, per polecat
	mergeProcs limits.Pool      // git merge-file processes, across polecats
	bases      baseCache        // the bases last kept, in memory

	mu    gosync.Mutex
	locks map[wire.Identity]chan struct{} // one transfer per polecat at a time
}

// New checks the configuration (zero fields take DefaultConfig's) and
// removes what transfers cut short by a killed hostd left: staging
// directories in the polecats' data roots and unfinished base contents.
func New(cfg Config, reg *registry.Registry) (*Service, error) {
	settings.FillZero(&cfg, DefaultConfig())
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("data: %w", err)
	}
	s := &Service{cfg: cfg, policy: cfg.policy(), rigPolicy: cfg.rigPolicy(), reg: reg, log: cfg.Logger, locks: map[wire.Identity]chan struct{}{},
		rate: limits.NewRate(cfg.AgentTransfersPerHour, time.Hour), logLimit: logging.NewLimiter(10, time.Minute), metrics: newMetrics(),
		mergeProcs: limits.NewPool(cfg.MergeProcesses)}
	s.removeLeftovers()
	return s, nil
}

// Root is the polecat's data root on the host.
func (s *Service) Root(id wire.Identity) string {
	if t, ok := forRig(s.cfg.Roots, id.Rig); ok {
		return strings.ReplaceAll(t, "{name}", id.Name)
	}
	return filepath.Join(s.cfg.Town, id.Rig, "polecats", id.Name)
}

// RigRoot is the directory on the host whose files the polecat's rig
// shares with all its polecats.
func (s *Service) RigRoot(id wire.Identity) string {
	if t, ok := forRig(s.cfg.RigRoots, id.Rig); ok {
		return t
	}
	return filepath.Join(s.cfg.Town, id.Rig, "polecats")
}

// forRig is rig's entry in m, or its lower-case name's.
func forRig(m map[string]string, rig string) (string, bool) {
	if t, ok := m[rig]; ok {
		return t, true
	}
	t, ok := m[strings.ToLower(rig)]
	return t, ok
}

// meetsRig refuses to write into the polecat's data root when a path that
// crosses there is, or is above or under, a path of its rig's read-only
// files (Roots and RigRoots set so that they meet): a polecat must never
// write what its rig's polecats run. Roots that exist are compared with
// their symlinks resolved.
func (s *Service) meetsRig(id wire.Identity) error {
	root, rig := resolved(s.Root(id)), resolved(s.RigRoot(id))
	for _, own := range s.policy.Includes() {
		for _, shared := range s.rigPolicy.Includes() {
			a, b := filepath.Join(root, filepath.FromSlash(own)), filepath.Join(rig, filepath.FromSlash(shared))
			if a == b || strings.HasPrefix(a, b+string(filepath.Separator)) || strings.HasPrefix(b, a+string(filepath.Separator)) {
				return fmt.Errorf("refused: %s's own path %s meets its rig's read-only %s (sync.roots and sync.rig_roots overlap); "+
					"nothing changed: a polecat never writes what its rig's polecats run", id, a, b)
			}
		}
	}
	return nil
}

// resolved is p with its symlinks resolved, or p cleaned if it does not
// exist.
func resolved(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return filepath.Clean(p)
}

// Conflicts is how many paths merges have left in conflict since hostd
// started.
func (s *Service) Conflicts() int { return int(s.conflicts.Load()) }

// lock serialises one polecat's transfers, waiting for the one under way
// no longer than ctx lets it.
func (s *Service) lock(ctx context.Context, id wire.Identity) (unlock func(), err error) {
	s.mu.Lock()
	l := s.locks[id]
	if l == nil {
		l = make(chan struct{}, 1)
		s.locks[id] = l
	}
	s.mu.Unlock()
	select {
	case l <- struct{}{}:
		return func() { <-l }, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting for %s's transfer under way to finish: %w", id, ctx.Err())
	}
}

// baseDir keeps what was last sent to, or taken from, a polecat.
func (s *Service) baseDir(id wire.Identity) string {
	return filepath.Join(s.cfg.Dir, id.Rig, id.Name)
}

// Forget removes what hostd keeps of the polecat for its data channel, its
// base and delete hold, once any transfer of its under way has ended
// (waiting no longer than ctx lets it), and says whether there was any.
// Its data root is the operator's and stays, and so do the journal's
// lines; the hold goes with the base (docs/liveness.md, hostd forget).
func (s *Service) Forget(ctx context.Context, id wire.Identity) (bool, error) {
	if err := id.Validate(); err != nil {
		return false, err
	}
	unlock, err := s.lock(ctx, id)
	if err != nil {
		return false, err
	}
	defer unlock()
	s.bases.drop(id)
	return state.RemoveIn(s.cfg.Dir, id.Rig, id.Name)
}

// ServeStream serves the agent's sync streams: fetch (it has no data yet)
// and upload (teardown, checkpoint).
func (s *Service) ServeStream(ctx context.Context, st *tunnel.Stream) {
	req, ok := tunnel.DecodeRequest(st, func(r wire.SyncRequest) error {
		if r.Op != wire.SyncFetch && r.Op != wire.SyncUpload {
			return fmt.Errorf("sync operation %q is not one an agent opens (fetch, upload)", r.Op)
		}
		return nil
	})
	if !ok {
		return
	}
	id := st.Session().Peer()
	if ok, wait := s.rate.Take(id); !ok {
		limits.Hit(limits.Sync)
		reason := fmt.Sprintf("more than %d data transfers in an hour (sync.agent_transfers_per_hour); try again in %v", s.cfg.AgentTransfersPerHour, wait.Round(time.Second))
		if ok, held := s.logLimit.Allow(id.String()); ok {
			s.log.Warn("sync: refused a transfer", "polecat", id, "op", req.Op, "reason", reason, "lines_not_logged", held)
		}
		_ = st.Reject(reason)
		return
	}
	_ = st.SetDeadline(time.Now().Add(s.cfg.Timeout))
	switch req.Op {
	case wire.SyncFetch:
		res, _ := s.push(ctx, st.Session(), "fetch", false, nil)
		_ = wire.WriteSyncResult(st, res)
	default: // upload
		res, _ := s.receive(ctx, id, st, req.Op, req.Reason, api.PullOptions{}, nil)
		_ = wire.WriteSyncResult(st, res)
	}
	_ = st.CloseWrite()
}

// Push sends the polecat's host data into its container (hostd sync
// push), telling progress (when not nil) how far it is. The container's
// changes since the last exchange are pulled and merged first, so that the
// push cannot overwrite them: what it sends includes them (a container that
// has no data yet refuses the pull, and the push goes on).
func (s *Service) Push(ctx context.Context, id wire.Identity, progress func(api.SyncProgress)) (wire.SyncResult, error) {
	c, ok := s.reg.Current(id)
	if !ok {
		return wire.SyncResult{}, fmt.Errorf("%s is not connected", id)
	}
	if pulled, err := s.Pull(ctx, id, api.PullOptions{}, nil); err != nil && !wire.IsSyncNoData(err) {
		return pulled, fmt.Errorf("taking %s's changes before the push failed, so nothing was pushed: %w", id, err)
	}
	return s.push(ctx, c.Session(), "requested", true, progress)
}

// Pull takes the container's data and merges it into the host's (hostd
// sync pull); with o.DryRun it reports the merge without doing it, and
// with o.AllowDeletes it does a merge the delete share would hold. The
// agent sends only what changed since the last exchange; if hostd does not
// have that base, it asks again for everything.
func (s *Service) Pull(ctx context.Context, id wire.Identity, o api.PullOptions, progress func(api.SyncProgress)) (wire.SyncResult, error) {
	res, err := s.pull(ctx, id, o, false, progress)
	if errors.Is(err, archive.ErrBaseMismatch) {
		s.log.Info("sync: the agent's changes refer to a base hostd does not have; asking for everything", "polecat", id)
		res, err = s.pull(ctx, id, o, true, progress)
	}
	return res, err
}

func (s *Service) pull(ctx context.Context, id wire.Identity, o api.PullOptions, full bool, progress func(api.SyncProgress)) (wire.SyncResult, error) {
	c, ok := s.reg.Current(id)
	if !ok {
		return wire.SyncResult{}, fmt.Errorf("%s is not connected", id)
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	st, err := c.Session().OpenStream(ctx, wire.KindSync, wire.SyncRequest{Op: wire.SyncPull, Include: s.policy.Include, Exclude: s.policy.Exclude, Full: full})
	if err != nil {
		return wire.SyncResult{}, fmt.Errorf("asking %s for its data: %w", id, err)
	}
	defer st.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = st.SetDeadline(dl)
	}
	// The request goes out with the first read; the result goes back on
	// the same stream once the archive is in.
	res, err := s.receive(ctx, id, st, wire.SyncPull, "requested", o, progress)
	_ = wire.WriteSyncResult(st, res)
	_ = st.CloseWrite()
	return res, err
}
