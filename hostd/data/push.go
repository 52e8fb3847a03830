package data

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/polecat-sidecar/sidecar/hostd/api"
	"github.com/polecat-sidecar/sidecar/sync/archive"
	"github.com/polecat-sidecar/sidecar/tunnel"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

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
