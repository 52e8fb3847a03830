package data

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/polecat-sidecar/sidecar/hostd/state"
	datasync "github.com/polecat-sidecar/sidecar/sync"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// A polecat's base is what the host last sent it or took from it: the
// manifest (base.json) and the contents (base/), which a three-way merge
// needs.

// loadBase is the polecat's base manifest and contents, or nil and "" if
// there is none yet (everything the container has then counts as new).
func (s *Service) loadBase(id wire.Identity) (*datasync.Manifest, string) {
	var m *datasync.Manifest
	if err := state.Load(filepath.Join(s.baseDir(id), "base.json"), &m); err != nil || m == nil {
		return nil, ""
	}
	return m, filepath.Join(s.baseDir(id), "base")
}

// keepBase unpacks the archive just sent as the polecat's new base.
func (s *Service) keepBase(ctx context.Context, id wire.Identity, sent io.Reader, m *datasync.Manifest) error {
	tmp, err := os.MkdirTemp(s.baseDir(id), "base-new-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if _, err := datasync.Unpack(ctx, sent, filepath.Join(tmp, "tree"), s.policy, s.cfg.limits()); err != nil {
		return err
	}
	return s.replaceBase(id, filepath.Join(tmp, "tree"), m)
}

// replaceBase makes tree (with manifest m) the polecat's base.
func (s *Service) replaceBase(id wire.Identity, tree string, m *datasync.Manifest) error {
	dir := s.baseDir(id)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	cur, old := filepath.Join(dir, "base"), filepath.Join(dir, "base.old")
	_ = os.RemoveAll(old)
	if err := os.Rename(cur, old); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("setting the base aside: %w", err)
	}
	if err := os.Rename(tree, cur); err != nil {
		_ = os.Rename(old, cur)
		return fmt.Errorf("keeping the base: %w", err)
	}
	_ = os.RemoveAll(old)
	return state.Save(filepath.Join(dir, "base.json"), m)
}

// linkTree makes dst a copy of the tree m lists under src, files
// hard-linked.
func linkTree(src, dst string, m *datasync.Manifest) error {
	if err := os.MkdirAll(dst, 0o700); err != nil {
		return err
	}
	for _, e := range m.Entries {
		from, to := filepath.Join(src, filepath.FromSlash(e.Path)), filepath.Join(dst, filepath.FromSlash(e.Path))
		var err error
		switch e.Type {
		case datasync.TypeDir:
			err = os.MkdirAll(to, 0o700)
		case datasync.TypeSymlink:
			err = os.Symlink(e.Target, to)
		default:
			err = os.Link(from, to)
		}
		if err != nil {
			return fmt.Errorf("keeping %s for the base: %w", e.Path, err)
		}
	}
	return nil
}
