// Package data is gt-agent's half of the data channel (hostd's is
// hostd/data): it installs the whitelisted data hostd sends into the
// container's data root, asks for it when the agent first connects, and
// sends the container's back when hostd pulls, on a checkpoint, and at
// teardown. Packing, checking and extracting are package sync's.
//
// Beside the polecat's own data hostd sends its rig's read-only files
// (push-rig: Claude Code's settings, commands and hooks, which Gas Town
// gives all of a rig's polecats). They go into the same data root but are
// no part of the base: nothing the agent sends covers them (hostd's
// policies keep the two apart), so they never come back.
//
// What the agent sends back is read against its base, the tree last
// exchanged with hostd: a file of the base missing from the root is a
// deletion. So the base is bound to the root it was taken from: installing
// hostd's data writes a random id into the root (sync.RootMarkerName) and
// keeps the same id beside the base. A root that is missing, lacks that
// id, or holds none of the base's files is not the one the base describes
// (a new container with a kept state directory, another agent's state):
// the agent asks hostd for the data and sends nothing from it.
package data

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/polecat-sidecar/sidecar/internal/settings"
	datasync "github.com/polecat-sidecar/sidecar/sync"
	"github.com/polecat-sidecar/sidecar/sync/archive"
	"github.com/polecat-sidecar/sidecar/tunnel"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// Config configures the agent's data channel.
type Config struct {
	// Root is the container's data root.
	Root string
	// StateDir keeps what hostd last sent (the policy), the base and the
	// id binding the base to Root, so that a restarted agent neither asks
	// again nor forgets what to send back. It is this agent's alone.
	StateDir string
	// Checkpoint is how often the container's data is sent to hostd;
	// negative turns checkpoints off.
	Checkpoint time.Duration
	// Teardown bounds the final upload when the agent is stopped.
	Teardown time.Duration
	// Limits bound what one archive from hostd may write.
	Limits datasync.Limits
	// Logger receives one line per transfer.
	Logger *slog.Logger
}

// DefaultConfig checkpoints every 10 minutes and gives the final upload
// 8 s, to fit Docker's default 10 s stop grace; an archive from hostd is
// bounded by datasync.DefaultLimits. StateDir has no default: the state is
// kept in the working directory.
func DefaultConfig() Config {
	return Config{
		Root:       ".",
		Checkpoint: 10 * time.Minute,         // negative: never
		Teardown:   8 * time.Second,          // above 0
		Limits:     datasync.DefaultLimits(), // zero fields take its defaults
		Logger:     slog.Default(),
	}
}

// Validate names each field out of its range; New calls it once zero
// fields have their defaults.
func (c Config) Validate() error {
	return errors.Join(
		settings.Positive("Teardown", c.Teardown),
		settings.NotZero("Checkpoint", c.Checkpoint, "negative: never"),
	)
}

// Service is safe for concurrent use.
type Service struct {
	cfg      Config
	sessions tunnel.Sessions

	busy   chan struct{} // held by the one transfer at a time; guards policy, last and rootID
	policy *datasync.Policy
	last   *datasync.Manifest // the tree last exchanged with hostd: the base both have
	rootID string             // the id in Root's marker when last was installed there
}

// New prepares the service; zero Config fields take DefaultConfig's.
func New(cfg Config, sessions tunnel.Sessions) (*Service, error) {
	settings.FillZero(&cfg, DefaultConfig())
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("data: %w", err)
	}
	s := &Service{cfg: cfg, sessions: sessions, busy: make(chan struct{}, 1)}
	if r, ok := s.loadReceived(); ok {
		s.policy, s.rootID = &datasync.Policy{Include: r.Include, Exclude: r.Exclude}, r.RootID
	}
	s.loadLast()
	s.adoptLegacy()
	return s, nil
}

// lock waits for the other transfer to end, or for ctx; unlock gives the
// turn back.
func (s *Service) lock(ctx context.Context) (unlock func(), err error) {
	select {
	case s.busy <- struct{}{}:
		return func() { <-s.busy }, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("another data transfer is still running: %w", ctx.Err())
	}
}

// policy is hostd's policy in a push or pull request.
func policy(r wire.SyncRequest) datasync.Policy {
	return datasync.Policy{Include: r.Include, Exclude: r.Exclude}
}

// ServeStream serves hostd's push (install its archive) and pull (send
// ours).
func (s *Service) ServeStream(ctx context.Context, st *tunnel.Stream) {
	req, ok := tunnel.DecodeRequest(st, func(r wire.SyncRequest) error { return policy(r).Validate() })
	if !ok {
		return
	}
	p := policy(req)
	switch req.Op {
	case wire.SyncPush, wire.SyncPushRig:
		s.install(ctx, st, req.Op, p)
	case wire.SyncPull:
		unlock, err := s.lock(ctx)
		if err != nil {
			_ = st.Reject(err.Error())
			return
		}
		defer unlock()
		if err := s.noData(&p); err != nil {
			s.cfg.Logger.Warn("sync: refused hostd's pull", "err", err)
			_ = st.Reject(err.Error())
			return
		}
		res, err := s.send(ctx, st, p, !req.Full)
		s.logResult("pulled by hostd", res, err)
	default:
		_ = st.Reject(fmt.Sprintf("sync operation %q is not one hostd opens (push, push-rig, pull)", req.Op))
	}
}

// install extracts hostd's archive into the data root and answers. The
// polecat's own data (push) becomes the base, and the root is bound to
// it; its rig's read-only files (push-rig) are only installed.
func (s *Service) install(ctx context.Context, st *tunnel.Stream, op string, p datasync.Policy) {
	unlock, err := s.lock(ctx)
	if err != nil {
		_ = st.Reject(err.Error())
		return
	}
	defer unlock()
	var res wire.SyncResult
	m, err := archive.Extract(ctx, st, s.cfg.Root, p, s.cfg.Limits)
	if err == nil {
		res.Files, res.Bytes = m.Files()
		what := "the rig's read-only files"
		if op == wire.SyncPush {
			archive.MarkRacy(s.cfg.Root, m)
			s.exchanged(m)
			s.bind(p)
			what = "hostd's data"
		}
		s.cfg.Logger.Info("sync: installed "+what, "root", s.cfg.Root, "files", res.Files, "bytes", res.Bytes)
	} else {
		res.Error = err.Error()
		s.cfg.Logger.Warn("sync: refused hostd's archive; nothing changed", "err", err)
	}
	_ = wire.WriteSyncResult(st, res)
	_ = st.CloseWrite()
}

// send packs the data root onto st (a pull, or an upload this agent
// opened), half-closes, and reads hostd's result. With delta, files as
// they were at the last exchange are left out. The caller has checked
// noData.
func (s *Service) send(ctx context.Context, st *tunnel.Stream, p datasync.Policy, delta bool) (wire.SyncResult, error) {
	if dl, ok := ctx.Deadline(); ok {
		_ = st.SetDeadline(dl)
	}
	var prev *datasync.Manifest
	if delta {
		prev = s.last
	}
	m, _, err := archive.Pack(ctx, s.cfg.Root, p, st, archive.Since(prev), archive.TrackRacy())
	if err != nil {
		return wire.SyncResult{}, fmt.Errorf("packing %s: %w", s.cfg.Root, err)
	}
	if err := st.CloseWrite(); err != nil {
		return wire.SyncResult{}, err
	}
	res, err := wire.ReadSyncResult(st)
	switch {
	case err != nil:
	case res.Error == archive.ErrBaseMismatch.Error():
		err = archive.ErrBaseMismatch
	case res.Error != "":
		err = errors.New("hostd refused it: " + res.Error)
	default:
		s.exchanged(m)
	}
	return res, err
}

// upload sends the container's data to hostd on a stream of our own: what
// changed since the last exchange, or everything if hostd lacks that base;
// nothing, with a *noDataError, if the container has no data.
func (s *Service) upload(ctx context.Context, reason string) (wire.SyncResult, error) {
	unlock, err := s.lock(ctx)
	if err != nil {
		return wire.SyncResult{}, err
	}
	defer unlock()
	if err := s.noData(s.policy); err != nil {
		return wire.SyncResult{}, err
	}
	res, err := s.uploadOnce(ctx, reason, true)
	if errors.Is(err, archive.ErrBaseMismatch) {
		res, err = s.uploadOnce(ctx, reason, false)
	}
	return res, err
}

func (s *Service) uploadOnce(ctx context.Context, reason string, delta bool) (wire.SyncResult, error) {
	sess, err := s.sessions.Session(ctx)
	if err != nil {
		return wire.SyncResult{}, fmt.Errorf("no tunnel: %w", err)
	}
	st, err := sess.OpenStream(ctx, wire.KindSync, wire.SyncRequest{Op: wire.SyncUpload, Reason: reason})
	if err != nil {
		return wire.SyncResult{}, err
	}
	defer st.Close()
	return s.send(ctx, st, *s.policy, delta)
}

// fetch asks hostd for the data, once.
func (s *Service) fetch(ctx context.Context) error {
	sess, err := s.sessions.Session(ctx)
	if err != nil {
		return err
	}
	st, err := sess.OpenStream(ctx, wire.KindSync, wire.SyncRequest{Op: wire.SyncFetch})
	if err != nil {
		return err
	}
	defer st.Close()
	_ = st.SetDeadline(time.Now().Add(10 * time.Minute))
	if err := st.CloseWrite(); err != nil {
		return err
	}
	res, err := wire.ReadSyncResult(st)
	if err == nil && res.Error != "" {
		err = errors.New(res.Error)
	}
	return err
}

// Run asks hostd for the data if this container has none yet, then sends
// a checkpoint every Checkpoint until ctx ends. A checkpoint that finds
// the container has no data (its root gone, emptied or replaced) asks for
// the data instead.
func (s *Service) Run(ctx context.Context) {
	s.obtain(ctx)
	if s.cfg.Checkpoint < 0 {
		return
	}
	t := time.NewTicker(s.cfg.Checkpoint)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		res, err := s.upload(ctx, "checkpoint")
		if _, ok := errors.AsType[*noDataError](err); ok {
			s.obtain(ctx)
			continue
		}
		s.logResult("checkpoint sent", res, err)
	}
}

// obtain asks hostd for the data, every 5 s until it comes or ctx ends,
// if this container has none.
func (s *Service) obtain(ctx context.Context) {
	unlock, err := s.lock(ctx)
	if err != nil {
		return
	}
	why := s.noData(s.policy)
	unlock()
	if why == nil {
		return
	}
	s.cfg.Logger.Info("sync: asking hostd for the polecat's data", "because", why)
	for {
		err := s.fetch(ctx)
		if err == nil {
			return
		}
		s.cfg.Logger.Warn("sync: fetching the polecat's data failed; retrying", "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(5 * time.Second):
		}
	}
}

// Teardown sends the container's data one last time, within the Teardown
// deadline, and says in the log if it could not.
func (s *Service) Teardown() {
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.Teardown)
	defer cancel()
	start := time.Now()
	res, err := s.upload(ctx, "teardown")
	if _, ok := errors.AsType[*noDataError](err); ok {
		s.cfg.Logger.Info("sync: no final upload", "because", err)
		return
	}
	if err != nil {
		s.cfg.Logger.Warn("sync: the final upload did not finish; what changed since the last checkpoint is only in this container",
			"deadline", s.cfg.Teardown, "after", time.Since(start).Round(time.Millisecond), "err", err)
		return
	}
	s.logResult("final upload sent", res, nil)
}

func (s *Service) logResult(what string, res wire.SyncResult, err error) {
	if err != nil {
		s.cfg.Logger.Warn("sync: "+what+" failed", "err", err)
		return
	}
	s.cfg.Logger.Info("sync: "+what, "files", res.Files, "bytes", res.Bytes, "changes", len(res.Changes))
}
