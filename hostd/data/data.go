// Package data is hostd's half of the data channel: it sends a polecat's
// whitelisted data (its data root on the host) into the container when
// the agent first asks and on hostd sync push, takes the container's back
// on hostd sync pull and on the agent's uploads (teardown, checkpoints),
// merges it into the host's tree against what it last sent (package sync
// does the packing, the checks and the merge), keeps that base per
// polecat, and journals every transfer.
package data

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	gosync "sync"
	"sync/atomic"
	"time"

	"github.com/polecat-sidecar/sidecar/hostd/control"
	"github.com/polecat-sidecar/sidecar/hostd/registry"
	"github.com/polecat-sidecar/sidecar/internal/limits"
	"github.com/polecat-sidecar/sidecar/internal/logging"
	datasync "github.com/polecat-sidecar/sidecar/sync"
	"github.com/polecat-sidecar/sidecar/tunnel"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// Config configures the data service.
type Config struct {
	// Town is the Gas Town root.
	Town string
	// Roots maps a rig to its polecats' data root on the host, {name}
	// standing for the polecat; rigs not listed use DefaultRoot. A root
	// without {name} is shared by the rig's polecats: each merges into it
	// against its own base, one at a time.
	Roots map[string]string
	// Include and Exclude are the policy (datasync.DefaultInclude and the
	// blacklist alone when empty).
	Include, Exclude []string
	// MaxBytes, MaxFiles, MaxFileSize and MaxRatio bound what one archive
	// from a container may write (datasync.Limits; its defaults when zero).
	MaxBytes, MaxFiles, MaxFileSize, MaxRatio int
	// Dir keeps each polecat's base and the journal (state.Dir.Data).
	Dir string
	// Timeout bounds one transfer.
	Timeout time.Duration
	// AgentTransfersPerHour bounds the transfers a polecat's agent may
	// start (fetches and uploads) per hour, that many at once; an agent
	// checkpoints every 10 minutes by default.
	AgentTransfersPerHour int
	// Logger receives one line per transfer.
	Logger *slog.Logger
}

// DefaultRoot is a polecat's data root unless Roots says otherwise: its
// directory in the rig, as Gas Town lays it out.
const DefaultRoot = "<town>/<rig>/polecats/{name}"

// DefaultConfig is the default policy and limits (datasync.DefaultLimits),
// 10 minutes a transfer.
func DefaultConfig() Config {
	l := datasync.DefaultLimits()
	return Config{Include: datasync.DefaultInclude, MaxBytes: int(l.MaxBytes), MaxFiles: l.MaxFiles, MaxFileSize: int(l.MaxFileSize),
		MaxRatio: int(l.MaxRatio), Timeout: 10 * time.Minute, AgentTransfersPerHour: 30, Logger: slog.Default()}
}

// limits is what one archive from a container may write.
func (c Config) limits() datasync.Limits {
	return datasync.Limits{MaxBytes: int64(c.MaxBytes), MaxFiles: c.MaxFiles, MaxFileSize: int64(c.MaxFileSize), MaxRatio: int64(c.MaxRatio)}
}

// Service is safe for concurrent use.
type Service struct {
	cfg    Config
	policy datasync.Policy
	reg    *registry.Registry
	log    *slog.Logger

	metrics   *metrics
	conflicts atomic.Int64     // conflicts since hostd started, for status
	rate      *limits.Rate     // agent-initiated transfers, per polecat
	logLimit  *logging.Limiter // refusals, per polecat

	mu    gosync.Mutex
	locks map[wire.Identity]*gosync.Mutex // one transfer per polecat at a time
}

// New checks the configuration; zero fields take DefaultConfig's.
func New(cfg Config, reg *registry.Registry) (*Service, error) {
	d := DefaultConfig()
	if len(cfg.Include) == 0 {
		cfg.Include = d.Include
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = d.Timeout
	}
	if cfg.AgentTransfersPerHour <= 0 {
		cfg.AgentTransfersPerHour = d.AgentTransfersPerHour
	}
	if cfg.Logger == nil {
		cfg.Logger = d.Logger
	}
	if cfg.Dir == "" {
		return nil, errors.New("data: Config.Dir is required")
	}
	p := datasync.Policy{Include: cfg.Include, Exclude: cfg.Exclude}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	for rig, root := range cfg.Roots {
		if !filepath.IsAbs(root) {
			return nil, fmt.Errorf("sync.roots: rig %s: %q must be an absolute path ({name} stands for the polecat)", rig, root)
		}
	}
	return &Service{cfg: cfg, policy: p, reg: reg, log: cfg.Logger, locks: map[wire.Identity]*gosync.Mutex{},
		rate: limits.NewRate(cfg.AgentTransfersPerHour, time.Hour), logLimit: logging.NewLimiter(10, time.Minute), metrics: newMetrics()}, nil
}

// Root is the polecat's data root on the host.
func (s *Service) Root(id wire.Identity) string {
	if t, ok := s.cfg.Roots[id.Rig]; ok {
		return strings.ReplaceAll(t, "{name}", id.Name)
	}
	if t, ok := s.cfg.Roots[strings.ToLower(id.Rig)]; ok {
		return strings.ReplaceAll(t, "{name}", id.Name)
	}
	return filepath.Join(s.cfg.Town, id.Rig, "polecats", id.Name)
}

// Conflicts is how many paths merges have left in conflict since hostd
// started.
func (s *Service) Conflicts() int { return int(s.conflicts.Load()) }

// Policy is the policy both sides apply.
func (s *Service) Policy() datasync.Policy { return s.policy }

// lock serialises one polecat's transfers.
func (s *Service) lock(id wire.Identity) func() {
	s.mu.Lock()
	l := s.locks[id]
	if l == nil {
		l = &gosync.Mutex{}
		s.locks[id] = l
	}
	s.mu.Unlock()
	l.Lock()
	return l.Unlock
}

// baseDir keeps what was last sent to, or taken from, a polecat.
func (s *Service) baseDir(id wire.Identity) string {
	return filepath.Join(s.cfg.Dir, id.Rig, id.Name)
}

// ServeStream serves the agent's sync streams: fetch (it has no data yet)
// and upload (teardown, checkpoint).
func (s *Service) ServeStream(ctx context.Context, st *tunnel.Stream) {
	var req wire.SyncRequest
	err := st.DecodeMeta(&req)
	if err == nil && req.Op != wire.SyncFetch && req.Op != wire.SyncUpload {
		err = fmt.Errorf("sync operation %q is not one an agent opens (fetch, upload)", req.Op)
	}
	if err != nil {
		_ = st.Reject(err.Error())
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
		res, _ := s.push(ctx, st.Session(), "fetch", nil)
		_ = wire.WriteSyncResult(st, res)
	default: // upload
		res, _ := s.receive(ctx, id, st, req.Op, req.Reason, false, nil)
		_ = wire.WriteSyncResult(st, res)
	}
	_ = st.CloseWrite()
}

// Push sends the polecat's host data into its container (hostd sync
// push), telling progress (when not nil) how far it is. The container's
// changes since the last exchange are pulled and merged first, so that the
// push cannot overwrite them: what it sends includes them.
func (s *Service) Push(ctx context.Context, id wire.Identity, progress func(control.SyncProgress)) (wire.SyncResult, error) {
	c, ok := s.reg.Current(id)
	if !ok {
		return wire.SyncResult{}, fmt.Errorf("%s is not connected", id)
	}
	if pulled, err := s.Pull(ctx, id, false, nil); err != nil {
		return pulled, fmt.Errorf("taking %s's changes before the push failed, so nothing was pushed: %w", id, err)
	}
	return s.push(ctx, c.Session(), "requested", progress)
}

// Pull takes the container's data and merges it into the host's (hostd
// sync pull); with dryRun it reports the merge without doing it. The agent
// sends only what changed since the last exchange; if hostd does not have
// that base, it asks again for everything.
func (s *Service) Pull(ctx context.Context, id wire.Identity, dryRun bool, progress func(control.SyncProgress)) (wire.SyncResult, error) {
	res, err := s.pull(ctx, id, dryRun, false, progress)
	if errors.Is(err, datasync.ErrBaseMismatch) {
		s.log.Info("sync: the agent's changes refer to a base hostd does not have; asking for everything", "polecat", id)
		res, err = s.pull(ctx, id, dryRun, true, progress)
	}
	return res, err
}

func (s *Service) pull(ctx context.Context, id wire.Identity, dryRun, full bool, progress func(control.SyncProgress)) (wire.SyncResult, error) {
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
	res, err := s.receive(ctx, id, st, wire.SyncPull, "requested", dryRun, progress)
	_ = wire.WriteSyncResult(st, res)
	_ = st.CloseWrite()
	return res, err
}

// push packs the host data root onto a new push stream, keeps what it
// sent as the base once the agent has installed it, and journals it.
func (s *Service) push(ctx context.Context, sess *tunnel.Session, why string, progress func(control.SyncProgress)) (wire.SyncResult, error) {
	id := sess.Peer()
	defer s.lock(id)()
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	start := time.Now()
	res, err := s.pushLocked(ctx, sess, id, progress)
	s.journal(control.SyncRecord{Time: start, Polecat: id.String(), Op: wire.SyncPush, Reason: why, Files: res.Files, Bytes: res.Bytes,
		Duration: time.Since(start), Error: errString(err)})
	return res, err
}

func (s *Service) pushLocked(ctx context.Context, sess *tunnel.Session, id wire.Identity, progress func(control.SyncProgress)) (wire.SyncResult, error) {
	root := s.Root(id)
	if _, err := os.Stat(root); errors.Is(err, fs.ErrNotExist) {
		// Nothing to send, and nothing to create in the rig for it: an
		// empty tree goes.
		root = filepath.Join(s.cfg.Dir, "empty")
		if err := os.MkdirAll(root, 0o700); err != nil {
			return fail(err)
		}
	}
	st, err := sess.OpenStream(ctx, wire.KindSync, wire.SyncRequest{Op: wire.SyncPush, Include: s.policy.Include, Exclude: s.policy.Exclude})
	if err != nil {
		return fail(fmt.Errorf("opening a push to %s: %w", id, err))
	}
	defer st.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = st.SetDeadline(dl)
	}
	var opts []datasync.PackOption
	if progress != nil {
		files, total, err := datasync.Size(root, s.policy)
		if err != nil {
			return fail(fmt.Errorf("sizing %s: %w", root, err))
		}
		opts = append(opts, datasync.WithProgress(func(f int, b int64) {
			progress(control.SyncProgress{Files: f, Bytes: b, TotalFiles: files, TotalBytes: total})
		}))
	}
	// What is sent becomes the base once the agent has installed it; its
	// contents are kept as they are packed.
	kept, err := s.newContents(id)
	if err != nil {
		return fail(err)
	}
	defer os.Remove(kept.Name())
	m, skipped, err := datasync.Pack(ctx, root, s.policy, st, append(opts, datasync.KeepContents(kept))...)
	if err = errors.Join(err, kept.Close()); err != nil {
		return fail(fmt.Errorf("packing %s: %w", root, err))
	}
	for _, p := range skipped {
		s.log.Info("sync: not sent (a symlink leading out, or not a file)", "polecat", id, "path", p)
	}
	if err := st.CloseWrite(); err != nil {
		return fail(err)
	}
	res, err := wire.ReadSyncResult(st)
	if err != nil {
		return fail(fmt.Errorf("push to %s: %w", id, err))
	}
	if res.Error != "" {
		return res, fmt.Errorf("%s refused the push: %s", id, res.Error)
	}
	if err := s.replaceBase(id, kept.Name(), m); err != nil {
		return res, fmt.Errorf("keeping what was sent to %s: %w", id, err)
	}
	s.log.Info("sync: pushed", "polecat", id, "files", res.Files, "bytes", res.Bytes)
	return res, nil
}

// receive reads an archive from r, checks it against the policy and
// limits, merges it into the host data root against the base, keeps it as
// the new base and journals it.
func (s *Service) receive(ctx context.Context, id wire.Identity, r io.Reader, op, why string, dryRun bool, progress func(control.SyncProgress)) (wire.SyncResult, error) {
	defer s.lock(id)()
	if progress != nil {
		r = &progressReader{r: r, progress: progress}
	}
	start := time.Now()
	res, err := s.receiveLocked(ctx, id, r, dryRun)
	rec := control.SyncRecord{Time: start, Polecat: id.String(), Op: op, Reason: why, DryRun: dryRun, Files: res.Files, Bytes: res.Bytes,
		Duration: time.Since(start), Error: errString(err)}
	for _, c := range res.Changes {
		count(&rec, c.Action)
	}
	s.journal(rec)
	return res, err
}

func (s *Service) receiveLocked(ctx context.Context, id wire.Identity, r io.Reader, dryRun bool) (wire.SyncResult, error) {
	root := s.Root(id)
	if err := os.MkdirAll(root, 0o755); err != nil {
		return fail(fmt.Errorf("creating %s's data root: %w", id, err))
	}
	// Unpacked beside the root, so merged files move in by rename. Holding
	// the polecat's lock, any earlier staging directory of the polecat's
	// is a killed hostd's: removed. (A '.' ends the name, which polecat
	// names lack, so nux's never matches nux-2's in a shared root.)
	pattern := "." + filepath.Base(root) + ".incoming." + id.Name + ".*"
	if old, _ := filepath.Glob(filepath.Join(filepath.Dir(root), pattern)); len(old) > 0 {
		for _, o := range old {
			_ = os.RemoveAll(o)
		}
		s.log.Info("sync: removed what a transfer cut short left", "polecat", id, "dirs", len(old))
	}
	staging, err := os.MkdirTemp(filepath.Dir(root), pattern)
	if err != nil {
		return fail(err)
	}
	defer os.RemoveAll(staging)
	base, contents := s.loadBase(id)
	var baseFS fs.FS // nil, not a nil *Contents, when none is kept
	if contents != nil {
		defer contents.Close()
		baseFS = contents
	}
	tree := filepath.Join(staging, "tree")
	theirs, err := datasync.UnpackSince(ctx, r, tree, s.policy, s.cfg.limits(), base)
	if err != nil {
		return fail(err)
	}
	files, bytes := theirs.Files()
	// The new base is what the container has now: its contents kept
	// before the merge moves files out of the staging tree.
	var next string
	if !dryRun {
		kept, err := s.newContents(id)
		if err != nil {
			return fail(err)
		}
		defer os.Remove(kept.Name())
		if err := errors.Join(datasync.WriteContents(kept, theirs, tree, baseFS), kept.Close()); err != nil {
			return fail(err)
		}
		next = kept.Name()
	}
	changes, err := datasync.Merge(root, base, theirs, tree, datasync.MergeOptions{
		Polecat: id.Name, Now: time.Now(), DryRun: dryRun, Base: baseFS})
	res := wire.SyncResult{Files: files, Bytes: bytes}
	for _, c := range changes {
		res.Changes = append(res.Changes, wire.SyncChange(c))
		if c.Action == datasync.Conflicted {
			s.log.Warn("sync: conflict; the host's version stays, the container's is beside it", "polecat", id, "path", c.Path, "copy", c.Copy)
		}
	}
	if err != nil {
		res.Error = err.Error()
		return res, err
	}
	if !dryRun {
		if err := s.replaceBase(id, next, theirs.Resolved()); err != nil {
			return res, err
		}
	}
	s.log.Info("sync: pulled", "polecat", id, "files", files, "changes", len(changes), "dry_run", dryRun)
	return res, nil
}

func fail(err error) (wire.SyncResult, error) { return wire.SyncResult{Error: err.Error()}, err }

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// progressReader tells progress how many bytes of the archive have come.
type progressReader struct {
	r        io.Reader
	n        int64
	progress func(control.SyncProgress)
}

func (p *progressReader) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	p.n += int64(n)
	p.progress(control.SyncProgress{Bytes: p.n})
	return n, err
}
