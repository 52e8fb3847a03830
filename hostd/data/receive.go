package data

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	datasync "github.com/polecat-sidecar/sidecar/sync"
	"github.com/polecat-sidecar/sidecar/sync/archive"
	"github.com/polecat-sidecar/sidecar/sync/merge"

	"github.com/polecat-sidecar/sidecar/hostd/api"
	"github.com/polecat-sidecar/sidecar/hostd/data/journal"
	"github.com/polecat-sidecar/sidecar/hostd/limits"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// receive reads an archive from r, checks it against the policy and
// limits, merges it into the host data root against the base, keeps it as
// the new base and journals it. It never writes the rig's read-only files
// (meetsRig).
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
	rec := journal.Record{Time: start, Polecat: id.String(), Op: op, Reason: why, DryRun: o.DryRun, Files: res.Files, Bytes: res.Bytes,
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
	if err := s.meetsRig(id); err != nil {
		s.refused(id, err)
		return nil, wire.SyncResult{Error: err.Error()}, err
	}
	root := s.Root(id)
	base, contents := s.loadBase(id)
	if contents != nil {
		defer contents.Close()
	}
	baseFS := fsOf(contents)
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
	// The new base, as base.json will hold it: admit counts its bytes
	// (encoded again when it is kept, rather than held through the merge;
	// the encoding is dead after the count).
	next := theirs.Resolved()
	encoded, err := next.AppendJSON(nil)
	if err != nil {
		return nil, wire.SyncResult{Error: err.Error()}, fmt.Errorf("encoding the new base: %w", err)
	}
	manifestBytes := int64(len(encoded) + 1)
	plan, err := in.Plan(ctx, base, merge.Options{Polecat: id.Name, Now: time.Now(), Policy: s.policy, Base: baseFS,
		MaxBothChanged: s.cfg.MaxConflicts, Gate: func() (func(), error) { return s.mergeProcs.Take(ctx, s.cfg.Timeout) }})
	var held hold
	if err == nil {
		held, err = s.admit(id, plan, base, theirs, contents, manifestBytes, o)
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
	kept, ix, err := s.newBaseContents(id, theirs, in.Staged(), contents)
	if kept != "" {
		defer os.Remove(kept)
	}
	if err != nil {
		return nil, wire.SyncResult{Error: err.Error()}, err
	}
	if err := plan.Apply(); err != nil {
		res.Error = err.Error()
		return plan.Changes, res, err
	}
	if err := s.replaceBase(id, kept, next, ix); err != nil {
		res.Error = err.Error()
		return plan.Changes, res, err
	}
	if o.AllowDeletes {
		held = confirmed(next) // the operator's word: what the merge left is confirmed
	}
	if err := s.keepHold(id, held); err != nil {
		s.log.Warn("sync: could not keep the delete hold's state", "polecat", id, "err", err)
	}
	s.log.Info("sync: pulled", "polecat", id, "files", res.Files, "changes", len(plan.Changes))
	return plan.Changes, res, nil
}

// admit refuses a planned merge that would take the polecat's storage
// over its budget, or hold it when it would take away more of the files
// hostd last confirmed than the delete share lets, without the operator's
// word (hold.go). Nothing has changed yet when it refuses. It returns the
// hold state the merge leaves. contents are the current base's (or nil);
// manifestBytes is what the new base.json takes.
func (s *Service) admit(id wire.Identity, plan *merge.Plan, base, theirs *datasync.Manifest, contents *archive.Contents, manifestBytes int64, o api.PullOptions) (hold, error) {
	after := plan.Stored + plan.Growth + archive.ContentsSize(theirs, contents) + manifestBytes
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
