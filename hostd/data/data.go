// Package data is hostd's half of the data channel: it sends a polecat's
// whitelisted data (its data root on the host) into the container when
// the agent first asks and on hostd sync push, takes the container's back
// on hostd sync pull and on the agent's uploads (teardown, checkpoints),
// merges it into the host's tree against what it last sent (package sync
// does the packing, the checks and the merge), keeps that base per
// polecat, and journals every transfer.
package data

import (
	"cmp"
	"context"
	"encoding/json"
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

	"github.com/polecat-sidecar/sidecar/hostd/api"

	"github.com/polecat-sidecar/sidecar/hostd/limits"
	"github.com/polecat-sidecar/sidecar/hostd/registry"
	"github.com/polecat-sidecar/sidecar/hostd/state"
	"github.com/polecat-sidecar/sidecar/internal/logging"
	datasync "github.com/polecat-sidecar/sidecar/sync"
	"github.com/polecat-sidecar/sidecar/sync/archive"
	"github.com/polecat-sidecar/sidecar/sync/merge"
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
	// MaxManifestBytes bounds an archive's manifest (sync.max_manifest_bytes).
	MaxManifestBytes int
	// MaxStoredBytes bounds what hostd stores for one polecat
	// (sync.max_stored_bytes): its data root's files that cross and its
	// base's kept contents. A transfer that would take it over is refused
	// before anything is written, and nothing changes.
	MaxStoredBytes int64
	// MaxConflicts bounds the paths changed on both sides that one
	// transfer merges (sync.max_conflicts): each is a git merge-file run or
	// a conflict copy. A transfer with more is refused whole.
	MaxConflicts int
	// MaxDeleteShare holds a transfer when the container would then have
	// taken away more than this share (0 to 1) of the files hostd last
	// confirmed for the polecat, counted over every transfer since
	// (sync.max_delete_share; hold.go), as rsync's --max-delete guards a
	// sync: nothing changes until the operator confirms with hostd sync
	// pull --allow-deletes. 1 turns the hold off.
	MaxDeleteShare float64
	// MergeProcesses bounds the git merge-file processes running at once,
	// across polecats (sync.merge_processes).
	MergeProcesses int
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
// 2 GiB stored per polecat, 500 paths changed on both sides per transfer,
// a hold on transfers deleting more than half a polecat's files, two
// merge processes at once, 10 minutes a transfer.
func DefaultConfig() Config {
	l := datasync.DefaultLimits()
	return Config{Include: datasync.DefaultInclude, MaxBytes: int(l.MaxBytes), MaxFiles: l.MaxFiles, MaxFileSize: int(l.MaxFileSize),
		MaxRatio: int(l.MaxRatio), MaxManifestBytes: int(l.MaxManifest), MaxStoredBytes: 2 << 30, MaxConflicts: merge.DefaultMaxBothChanged,
		MaxDeleteShare: 0.5, MergeProcesses: 2, Timeout: 10 * time.Minute, AgentTransfersPerHour: 30, Logger: slog.Default()}
}

// limits is what one archive from a container may write: no more than the
// storage budget either, so staging is bounded by it too.
func (c Config) limits() datasync.Limits {
	l := datasync.Limits{MaxBytes: int64(c.MaxBytes), MaxFiles: c.MaxFiles, MaxFileSize: int64(c.MaxFileSize), MaxRatio: int64(c.MaxRatio),
		MaxManifest: int64(c.MaxManifestBytes)}
	if l.MaxBytes == 0 || l.MaxBytes > c.MaxStoredBytes {
		l.MaxBytes = c.MaxStoredBytes
	}
	return l
}

// Service is safe for concurrent use.
type Service struct {
	cfg    Config
	policy datasync.Policy
	reg    *registry.Registry
	log    *slog.Logger

	metrics    *metrics
	conflicts  atomic.Int64     // conflicts since hostd started, for status
	rate       *limits.Rate     // agent-initiated transfers, per polecat
	logLimit   *logging.Limiter // refusals, per polecat
	mergeProcs limits.Pool      // git merge-file processes, across polecats

	mu    gosync.Mutex
	locks map[wire.Identity]chan struct{} // one transfer per polecat at a time
}

// New checks the configuration (zero fields take DefaultConfig's) and
// removes what transfers cut short by a killed hostd left: staging
// directories in the polecats' data roots and unfinished base contents.
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
	cfg.MaxStoredBytes = cmp.Or(cfg.MaxStoredBytes, d.MaxStoredBytes)
	cfg.MaxConflicts = cmp.Or(cfg.MaxConflicts, d.MaxConflicts)
	cfg.MaxDeleteShare = cmp.Or(cfg.MaxDeleteShare, d.MaxDeleteShare)
	cfg.MergeProcesses = cmp.Or(cfg.MergeProcesses, d.MergeProcesses)
	if cfg.Logger == nil {
		cfg.Logger = d.Logger
	}
	if cfg.Dir == "" {
		return nil, errors.New("data: Config.Dir is required")
	}
	switch {
	case cfg.MaxStoredBytes < 0:
		return nil, fmt.Errorf("sync.max_stored_bytes is %d; want a number of bytes above 0", cfg.MaxStoredBytes)
	case cfg.MaxConflicts < 0:
		return nil, fmt.Errorf("sync.max_conflicts is %d; want a count above 0", cfg.MaxConflicts)
	case cfg.MaxDeleteShare < 0 || cfg.MaxDeleteShare > 1:
		return nil, fmt.Errorf("sync.max_delete_share is %v; want a share from 0 to 1 (1 turns the hold off)", cfg.MaxDeleteShare)
	case cfg.MergeProcesses < 0:
		return nil, fmt.Errorf("sync.merge_processes is %d; want a count above 0", cfg.MergeProcesses)
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
	s := &Service{cfg: cfg, policy: p, reg: reg, log: cfg.Logger, locks: map[wire.Identity]chan struct{}{},
		rate: limits.NewRate(cfg.AgentTransfersPerHour, time.Hour), logLimit: logging.NewLimiter(10, time.Minute), metrics: newMetrics(),
		mergeProcs: limits.NewPool(cfg.MergeProcesses)}
	s.removeLeftovers()
	return s, nil
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

// MaxStoredBytes is the storage budget per polecat.
func (s *Service) MaxStoredBytes() int64 { return s.cfg.MaxStoredBytes }

// Policy is the policy both sides apply.
func (s *Service) Policy() datasync.Policy { return s.policy }

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
	return s.push(ctx, c.Session(), "requested", progress)
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

// push packs the host data root onto a new push stream, keeps what it
// sent as the base once the agent has installed it, and journals it.
func (s *Service) push(ctx context.Context, sess *tunnel.Session, why string, progress func(api.SyncProgress)) (wire.SyncResult, error) {
	id := sess.Peer()
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	unlock, err := s.lock(ctx, id)
	if err != nil {
		return fail(err)
	}
	defer unlock()
	start := time.Now()
	res, err := s.pushLocked(ctx, sess, id, progress)
	s.journal(api.SyncRecord{Time: start, Polecat: id.String(), Op: wire.SyncPush, Reason: why, Files: res.Files, Bytes: res.Bytes,
		Duration: time.Since(start), Error: errString(err)})
	return res, err
}

func (s *Service) pushLocked(ctx context.Context, sess *tunnel.Session, id wire.Identity, progress func(api.SyncProgress)) (wire.SyncResult, error) {
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
	var opts []archive.PackOption
	if progress != nil {
		files, total, err := archive.Size(root, s.policy)
		if err != nil {
			return fail(fmt.Errorf("sizing %s: %w", root, err))
		}
		opts = append(opts, archive.WithProgress(func(f int, b int64) {
			progress(api.SyncProgress{Files: f, Bytes: b, TotalFiles: files, TotalBytes: total})
		}))
	}
	// What is sent becomes the base once the agent has installed it; its
	// contents are kept as they are packed.
	kept, err := s.newContents(id)
	if err != nil {
		return fail(err)
	}
	defer os.Remove(kept.Name())
	m, skipped, err := archive.Pack(ctx, root, s.policy, st, append(opts, archive.KeepContents(kept))...)
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
	if err := s.confirm(id, m); err != nil { // the host's own data: what the delete hold counts from
		s.log.Warn("sync: could not keep the delete hold's state", "polecat", id, "err", err)
	}
	s.log.Info("sync: pushed", "polecat", id, "files", res.Files, "bytes", res.Bytes)
	return res, nil
}

// receive reads an archive from r, checks it against the policy and
// limits, merges it into the host data root against the base, keeps it as
// the new base and journals it.
func (s *Service) receive(ctx context.Context, id wire.Identity, r io.Reader, op, why string, o api.PullOptions, progress func(api.SyncProgress)) (wire.SyncResult, error) {
	unlock, err := s.lock(ctx, id)
	if err != nil {
		return fail(err)
	}
	defer unlock()
	if progress != nil {
		r = &progressReader{r: r, progress: progress}
	}
	start := time.Now()
	changes, res, err := s.receiveLocked(ctx, id, r, o)
	rec := api.SyncRecord{Time: start, Polecat: id.String(), Op: op, Reason: why, DryRun: o.DryRun, Files: res.Files, Bytes: res.Bytes,
		Duration: time.Since(start), Error: errString(err)}
	for _, c := range changes {
		count(&rec, c.Action)
	}
	s.journal(rec)
	return res, err
}

// receiveLocked does receive's work; changes are all the merge did, which
// res may list only in part (summarise).
func (s *Service) receiveLocked(ctx context.Context, id wire.Identity, r io.Reader, o api.PullOptions) ([]merge.Change, wire.SyncResult, error) {
	root := s.Root(id)
	base, contents := s.loadBase(id)
	var baseFS fs.FS // nil, not a nil *Contents, when none is kept
	if contents != nil {
		defer contents.Close()
		baseFS = contents
	}
	in, err := merge.Receive(ctx, r, root, id.Name, s.policy, s.cfg.limits(), base)
	var re *wire.RemoteError
	if errors.As(err, &re) {
		err = &agentRefusal{id: id, re: re} // not an archive hostd refused: the agent sent none
	}
	if err != nil {
		s.refused(id, err)
		return nil, wire.SyncResult{Error: err.Error()}, err
	}
	defer in.Close()
	theirs := in.Manifest
	res := wire.SyncResult{}
	res.Files, res.Bytes = theirs.Files()
	plan, err := in.Plan(ctx, base, merge.Options{Polecat: id.Name, Now: time.Now(), Policy: s.policy, Base: baseFS,
		MaxBothChanged: s.cfg.MaxConflicts, Gate: func() (func(), error) { return s.mergeProcs.Take(ctx, s.cfg.Timeout) }})
	var next hold
	if err == nil {
		next, err = s.admit(id, plan, base, theirs, o)
	}
	if err != nil {
		s.refused(id, err)
		res.Error = err.Error()
		return nil, res, err
	}
	res.Changes, res.More = summarise(plan.Changes)
	res.Skipped = theirs.Skipped[:min(len(theirs.Skipped), maxSkippedShown)]
	s.logConflicts(id, plan.Changes)
	if o.DryRun {
		return plan.Changes, res, nil
	}
	// The new base is what the container has now: its contents kept
	// before the merge moves files out of the staging tree.
	kept, err := s.newContents(id)
	if err != nil {
		return nil, wire.SyncResult{Error: err.Error()}, err
	}
	defer os.Remove(kept.Name())
	if err := errors.Join(archive.WriteContents(kept, theirs, in.Dir(), baseFS), kept.Close()); err != nil {
		return nil, wire.SyncResult{Error: err.Error()}, err
	}
	if err := plan.Apply(); err != nil {
		res.Error = err.Error()
		return plan.Changes, res, err
	}
	if err := s.replaceBase(id, kept.Name(), theirs.Resolved()); err != nil {
		res.Error = err.Error()
		return plan.Changes, res, err
	}
	if o.AllowDeletes {
		err = s.confirm(id, theirs.Resolved()) // the operator's word: what the merge left is confirmed
	} else {
		err = state.Save(s.holdPath(id), next)
	}
	if err != nil {
		s.log.Warn("sync: could not keep the delete hold's state", "polecat", id, "err", err)
	}
	s.log.Info("sync: pulled", "polecat", id, "files", res.Files, "changes", len(plan.Changes))
	return plan.Changes, res, nil
}

// admit refuses a planned merge that would take the polecat's storage
// over its budget, or hold it when it would take away more of the files
// hostd last confirmed than the delete share lets, without the operator's
// word (hold.go). Nothing has changed yet when it refuses. It returns the
// hold state the merge leaves.
func (s *Service) admit(id wire.Identity, plan *merge.Plan, base, theirs *datasync.Manifest, o api.PullOptions) (hold, error) {
	var manifest countingWriter // the new base.json, as state.Save will write it
	_ = json.NewEncoder(&manifest).Encode(theirs)
	after := plan.Stored + plan.Growth + archive.ContentsSize(theirs) + manifest.n
	if after > s.cfg.MaxStoredBytes {
		limits.Hit(limits.SyncStorage)
		return hold{}, fmt.Errorf("refused: hostd would store %d bytes for %s, over sync.max_stored_bytes (%d); nothing changed. "+
			"Remove files from its data root %s, or raise the setting", after, id, s.cfg.MaxStoredBytes, s.Root(id))
	}
	h := s.loadHold(id, base)
	next := h.after(plan.Lost)
	if !o.AllowDeletes && h.over(next, s.cfg.MaxDeleteShare) {
		limits.Hit(limits.SyncDeletes)
		return hold{}, fmt.Errorf("held: this transfer would delete %d file(s), and %d of the %d files hostd last confirmed for %s would then be gone or emptied "+
			"(over sync.max_delete_share %v); nothing changed. If the container really deleted them, confirm with 'hostd sync pull %s --allow-deletes'",
			len(plan.Lost), len(next.Lost), len(h.Confirmed), id, s.cfg.MaxDeleteShare, id)
	}
	return next, nil
}

// refused counts a refused transfer (limits it hit, and a refusal of any
// kind for the memory reclaim) and logs it, within the log budget.
func (s *Service) refused(id wire.Identity, err error) {
	var le *datasync.LimitError
	if errors.As(err, &le) {
		limits.Hit(limits.SyncArchive)
	}
	if ok, held := s.logLimit.Allow(id.String()); ok {
		s.log.Warn("sync: refused a transfer; nothing changed", "polecat", id, "err", err, "lines_not_logged", held)
	}
}

// countingWriter counts what is written to it.
type countingWriter struct{ n int64 }

func (c *countingWriter) Write(p []byte) (int, error) {
	c.n += int64(len(p))
	return len(p), nil
}

// agentRefusal is a pull the agent refused (its reason is its own).
type agentRefusal struct {
	id wire.Identity
	re *wire.RemoteError
}

func (e *agentRefusal) Error() string {
	return fmt.Sprintf("the agent of %s refused the pull: %s", e.id, e.re.Reason)
}
func (e *agentRefusal) Unwrap() error { return e.re }

// maxConflictLines is how many conflicts one transfer logs one by one;
// the rest are counted in one line.
const maxConflictLines = 10

// logConflicts logs a merge's conflicts, at most maxConflictLines of them.
func (s *Service) logConflicts(id wire.Identity, changes []merge.Change) {
	n := 0
	for _, c := range changes {
		if c.Action != merge.Conflicted {
			continue
		}
		if n++; n <= maxConflictLines {
			s.log.Warn("sync: conflict; the host's version stays, the container's is beside it", "polecat", id, "path", c.Path, "copy", c.Copy)
		}
	}
	if n > maxConflictLines {
		limits.Hit(limits.SyncLog)
		s.log.Warn("sync: more conflicts in this transfer than are logged one by one; hostd sync log and the pull's result list them", "polecat", id,
			"conflicts", n, "logged", maxConflictLines)
	}
}

// maxSkippedShown is how many of the paths a container left out a result
// names: each at most 4 KiB, 24 KiB escaped in JSON, so ten fit beside
// the changes (half the result) with room to spare.
const maxSkippedShown = 10

// maxResultBytes is what summarise lets a result's changes take: half
// what a SyncResult may be, so the rest always fits.
const maxResultBytes = wire.MaxSyncResult / 2

// summarise is as many changes as fit a SyncResult, and how many more
// there were: a merge that changed more than the wire can carry still
// says it succeeded.
func summarise(changes []merge.Change) (out []wire.SyncChange, more int) {
	size := 0
	for i, c := range changes {
		b, _ := json.Marshal(wire.SyncChange(c)) // escaped as it goes out: a path of control characters grows six-fold
		if size += len(b) + 1; size > maxResultBytes {
			return out, len(changes) - i
		}
		out = append(out, wire.SyncChange(c))
	}
	return out, 0
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
	progress func(api.SyncProgress)
}

func (p *progressReader) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	p.n += int64(n)
	p.progress(api.SyncProgress{Bytes: p.n})
	return n, err
}
