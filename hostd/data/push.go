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
	"github.com/polecat-sidecar/sidecar/hostd/data/journal"
	datasync "github.com/polecat-sidecar/sidecar/sync"
	"github.com/polecat-sidecar/sidecar/sync/archive"
	"github.com/polecat-sidecar/sidecar/sync/claude"
	"github.com/polecat-sidecar/sidecar/tunnel"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// push packs the host data root onto a new push stream, keeps what it
// sent as the base once the agent has installed it, and journals it;
// then it sends the rig's read-only files (pushRig). Its result is the
// polecat's own data's; an error from the rig's files comes with it.
// operator says the operator asked for it (hostd sync push), which
// confirms what it sends for the delete hold; an agent's fetch does not
// (hold.go).
func (s *Service) push(ctx context.Context, sess *tunnel.Session, why string, operator bool, progress func(api.SyncProgress)) (wire.SyncResult, error) {
	id := sess.Peer()
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	unlock, err := s.lock(ctx, id)
	if err != nil {
		return fail(err)
	}
	defer unlock()
	start := time.Now()
	res, err := s.pushLocked(ctx, sess, id, operator, progress)
	s.journal(journal.Record{Time: start, Polecat: id.String(), Op: wire.SyncPush, Reason: why, Files: res.Files, Bytes: res.Bytes,
		Duration: time.Since(start), Error: errString(err)})
	if err != nil {
		return res, err
	}
	if err := s.pushRig(ctx, sess, id, why); err != nil {
		return res, fmt.Errorf("%s has its own data, but not its rig's files: %w", id, err)
	}
	return res, nil
}

func (s *Service) pushLocked(ctx context.Context, sess *tunnel.Session, id wire.Identity, operator bool, progress func(api.SyncProgress)) (wire.SyncResult, error) {
	root := s.Root(id)
	if _, err := os.Stat(root); errors.Is(err, fs.ErrNotExist) {
		// Nothing to send, and nothing to create in the rig for it: an
		// empty tree goes.
		root = filepath.Join(s.cfg.Dir, "empty")
		if err := os.MkdirAll(root, 0o700); err != nil {
			return fail(err)
		}
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
	m, res, err := s.send(ctx, sess, wire.SyncPush, root, s.policy, append(opts, archive.KeepContents(kept))...)
	if cerr := kept.Close(); err == nil && cerr != nil {
		return fail(fmt.Errorf("keeping what was sent to %s: %w", id, cerr))
	}
	if err != nil {
		return res, err
	}
	// The delete hold, from the base the agent had until now.
	h := confirmed(m)
	if !operator {
		prev, contents := s.loadBase(id)
		if contents != nil {
			_ = contents.Close()
		}
		h = s.loadHold(id, prev).fetched(m, prev)
	}
	if err := s.replaceBase(id, kept.Name(), m, nil); err != nil {
		return res, fmt.Errorf("keeping what was sent to %s: %w", id, err)
	}
	if err := s.keepHold(id, h); err != nil {
		s.log.Warn("sync: could not keep the delete hold's state", "polecat", id, "err", err)
	}
	s.log.Info("sync: pushed", "polecat", id, "files", res.Files, "bytes", res.Bytes)
	return res, nil
}

// pushRig sends the files the polecat's rig shares with all its polecats
// (rigPolicy under RigRoot) into its container, and journals it. They are
// read-only: the agent installs them beside the polecat's own data and
// never sends them back, so no base is kept. Claude Code settings go with
// their hook commands rewritten to run the container's gt and bd; the
// files on the host are only read. A rig root with none of them sends
// nothing.
func (s *Service) pushRig(ctx context.Context, sess *tunnel.Session, id wire.Identity, why string) error {
	root := s.RigRoot(id)
	if files, _, err := archive.Size(root, s.rigPolicy); err == nil && files == 0 {
		return nil
	}
	start := time.Now()
	_, res, err := s.send(ctx, sess, wire.SyncPushRig, root, s.rigPolicy, archive.Rewrite(claude.IsSettings, claude.RewriteSettings))
	s.journal(journal.Record{Time: start, Polecat: id.String(), Op: wire.SyncPushRig, Reason: why, Files: res.Files, Bytes: res.Bytes,
		Duration: time.Since(start), Error: errString(err)})
	if err != nil {
		s.log.Warn("sync: the rig's files did not go in", "polecat", id, "root", root, "err", err)
		return err
	}
	s.log.Info("sync: pushed the rig's files", "polecat", id, "root", root, "files", res.Files, "bytes", res.Bytes)
	return nil
}

// send opens an op (push, push-rig) to the polecat's agent, packs root
// under p onto it, and reads the agent's result. It returns the manifest
// of what was sent, and the result: on error, with the reason.
func (s *Service) send(ctx context.Context, sess *tunnel.Session, op, root string, p datasync.Policy, opts ...archive.PackOption) (*datasync.Manifest, wire.SyncResult, error) {
	id := sess.Peer()
	failed := func(err error) (*datasync.Manifest, wire.SyncResult, error) {
		res, err := fail(err)
		return nil, res, err
	}
	st, err := sess.OpenStream(ctx, wire.KindSync, wire.SyncRequest{Op: op, Include: p.Include, Exclude: p.Exclude})
	if err != nil {
		return failed(fmt.Errorf("opening a %s to %s: %w", op, id, err))
	}
	defer st.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = st.SetDeadline(dl)
	}
	m, skipped, err := archive.Pack(ctx, root, p, st, opts...)
	if err != nil {
		return failed(fmt.Errorf("packing %s: %w", root, err))
	}
	for _, rel := range skipped {
		s.log.Info("sync: not sent (a symlink leading out, or not a file)", "polecat", id, "root", root, "path", rel)
	}
	if err := st.CloseWrite(); err != nil {
		return failed(err)
	}
	res, err := wire.ReadSyncResult(st)
	if err != nil {
		return failed(fmt.Errorf("%s to %s: %w", op, id, err))
	}
	if res.Error != "" {
		return nil, res, fmt.Errorf("%s refused the %s: %s", id, op, res.Error)
	}
	return m, res, nil
}
