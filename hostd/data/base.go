package data

import (
	"crypto/sha256"
	"encoding/hex"
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

// keepBase keeps what was just sent as the polecat's new base: the
// manifest, and the contents of the files a three-way merge could use
// (text-sized, 8 MiB at most), copied from the host root and kept only if
// still as sent.
func (s *Service) keepBase(id wire.Identity, root string, m *datasync.Manifest) error {
	if err := os.MkdirAll(s.baseDir(id), 0o700); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(s.baseDir(id), "base-new-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	tree := filepath.Join(tmp, "tree")
	for _, e := range m.Entries {
		to := filepath.Join(tree, filepath.FromSlash(e.Path))
		switch {
		case e.Type == datasync.TypeDir:
			err = os.MkdirAll(to, 0o700)
		case e.Type == datasync.TypeFile && e.Size <= maxBaseFile:
			if err = os.MkdirAll(filepath.Dir(to), 0o700); err == nil {
				err = copyIfSame(filepath.Join(root, filepath.FromSlash(e.Path)), to, e.SHA256)
			}
		}
		if err != nil {
			return err
		}
	}
	return s.replaceBase(id, tree, m)
}

// maxBaseFile is the largest file whose content a base keeps: the largest
// a three-way text merge is tried on.
const maxBaseFile = 8 << 20

// copyIfSame copies from to to if its content hashes to sha; otherwise it
// leaves nothing (the file changed since it was sent: no merge base).
func copyIfSame(from, to, sha string) error {
	in, err := os.Open(from)
	if err != nil {
		return nil
	}
	defer in.Close()
	out, err := os.Create(to)
	if err != nil {
		return err
	}
	h := sha256.New()
	_, err = io.Copy(io.MultiWriter(out, h), in)
	if err = errors.Join(err, out.Close()); err != nil || hex.EncodeToString(h.Sum(nil)) != sha {
		_ = os.Remove(to)
	}
	return nil
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

// linkTree makes dst a copy of the tree m lists, files hard-linked: from
// src, or for files m marks unchanged, from the old base (when it kept
// them).
func linkTree(src, oldBase, dst string, m *datasync.Manifest) error {
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
		case datasync.TypeFile:
			if e.Unchanged {
				if oldBase == "" {
					continue
				}
				from = filepath.Join(oldBase, filepath.FromSlash(e.Path))
				if _, serr := os.Lstat(from); serr != nil {
					continue // the old base kept no content for it
				}
			}
			err = os.Link(from, to)
		}
		if err != nil {
			return fmt.Errorf("keeping %s for the base: %w", e.Path, err)
		}
	}
	return nil
}
