package data

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/polecat-sidecar/sidecar/hostd/state"
	"github.com/polecat-sidecar/sidecar/internal/atomicfile"
	datasync "github.com/polecat-sidecar/sidecar/sync"
	"github.com/polecat-sidecar/sidecar/sync/archive"
	"github.com/polecat-sidecar/sidecar/sync/merge"
	"github.com/polecat-sidecar/sidecar/sync/tree"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// A polecat's base is what the host last sent it or took from it: the
// manifest (base.json) and the contents a three-way merge needs
// (base.tar, archive.Contents: one file however many the tree holds).

// loadBase is the polecat's base manifest and its kept contents (close
// them), or nil and nil if there is none yet (everything the container
// has then counts as new). A manifest whose contents are missing or
// unreadable comes with none: its paths changed on both sides conflict
// rather than merge. Both come from the cache while its files are the
// ones it was made from.
func (s *Service) loadBase(id wire.Identity) (*datasync.Manifest, *archive.Contents) {
	jsonPath, tarPath := filepath.Join(s.baseDir(id), "base.json"), filepath.Join(s.baseDir(id), "base.tar")
	jsonInfo, jerr := os.Stat(jsonPath)
	tarInfo, terr := os.Stat(tarPath)
	if jerr == nil && terr == nil {
		if m, ix, ok := s.bases.get(id, jsonInfo, tarInfo); ok {
			if c, err := archive.OpenIndexed(tarPath, ix); err == nil {
				return m, c
			}
		}
	}
	var m *datasync.Manifest
	if err := state.Load(jsonPath, &m); err != nil || m == nil {
		return nil, nil
	}
	c, err := archive.OpenContents(tarPath)
	if err != nil {
		s.log.Warn("sync: the base's contents are unreadable; files changed on both sides will conflict rather than merge", "polecat", id, "err", err)
		return m, nil
	}
	if jerr == nil && terr == nil {
		s.bases.put(id, m, c.Index(), jsonInfo, tarInfo)
	}
	return m, c
}

// newContents creates the file a new base's contents are written to,
// beside the current one; the caller removes it unless replaceBase took
// it.
func (s *Service) newContents(id wire.Identity) (*os.File, error) {
	if err := os.MkdirAll(s.baseDir(id), 0o700); err != nil {
		return nil, fmt.Errorf("creating the base directory: %w", err)
	}
	f, err := os.CreateTemp(s.baseDir(id), "base-new-*.tar")
	if err != nil {
		return nil, fmt.Errorf("creating the base's contents: %w", err)
	}
	return f, nil
}

// newBaseContents writes the contents a new base m keeps (archive.
// WriteContents, from sent, what the archive carried, and cur, the
// current base's) to a file beside the current ones, for the caller to remove unless
// replaceBase took it, and returns its path and index. When cur holds
// exactly what m keeps it writes nothing and returns "" and cur's index:
// rewriting base.tar cost an unchanged pull of 10,000 small files 25 MB.
func (s *Service) newBaseContents(id wire.Identity, m *datasync.Manifest, sent fs.FS, cur *archive.Contents) (string, *archive.ContentsIndex, error) {
	if cur != nil && cur.Holds(m) {
		return "", cur.Index(), nil
	}
	f, err := s.newContents(id)
	if err != nil {
		return "", nil, err
	}
	ix, err := archive.WriteContents(f, m, sent, fsOf(cur))
	return f.Name(), ix, errors.Join(err, f.Close())
}

// fsOf is c as an fs.FS: nil, not a nil *Contents, when there is none.
func fsOf(c *archive.Contents) fs.FS {
	if c == nil {
		return nil
	}
	return c
}

// replaceBase makes contents (a file from newContents, closed; "" to keep
// the current base.tar) and m the polecat's base. ix is the contents'
// index, when known, for the cache.
func (s *Service) replaceBase(id wire.Identity, contents string, m *datasync.Manifest, ix *archive.ContentsIndex) error {
	s.bases.drop(id)
	dir := s.baseDir(id)
	jsonPath, tarPath := filepath.Join(dir, "base.json"), filepath.Join(dir, "base.tar")
	if contents != "" {
		if err := os.Rename(contents, tarPath); err != nil {
			return fmt.Errorf("keeping the base: %w", err)
		}
	}
	// A tree of copies is how hostd kept the contents before base.tar.
	if err := os.RemoveAll(filepath.Join(dir, "base")); err != nil && !errors.Is(err, fs.ErrNotExist) {
		s.log.Warn("sync: could not remove an old base tree", "polecat", id, "err", err)
	}
	encoded, err := m.AppendJSON(nil)
	if err != nil {
		return fmt.Errorf("encoding the base: %w", err)
	}
	if err := atomicfile.Write(jsonPath, append(encoded, '\n'), 0o600); err != nil {
		return fmt.Errorf("keeping the base: %w", err)
	}
	jsonInfo, jerr := os.Stat(jsonPath)
	tarInfo, terr := os.Stat(tarPath)
	if ix != nil && jerr == nil && terr == nil {
		s.bases.put(id, m, ix, jsonInfo, tarInfo)
	}
	return nil
}

// baseSize is the bytes the polecat's base takes on disk (its manifest,
// kept contents and delete hold state).
func (s *Service) baseSize(id wire.Identity) int64 {
	var n int64
	for _, f := range []string{"base.json", "base.tar", "hold.json"} {
		if fi, err := os.Stat(filepath.Join(s.baseDir(id), f)); err == nil {
			n += fi.Size()
		}
	}
	return n
}

// Stored is what hostd stores for the polecat, as sync.max_stored_bytes
// counts it: the paths of its data root that cross (a shared root counts
// all of its polecats' files), the conflict copies beside them
// (merge.Survey: every entry at least a block), and its base.
func (s *Service) Stored(id wire.Identity) (int64, error) {
	sv, err := merge.SurveyRoot(s.Root(id), s.policy)
	if err != nil {
		return 0, fmt.Errorf("measuring what is stored for %s: %w", id, err)
	}
	return sv.Bytes + s.baseSize(id), nil
}

// EscapingLinks lists the symlinks in the polecat's data root that lead
// outside it, or to a path that does not cross, through every link on the
// way: hostd never sends them into a container, and the operator should
// mend them.
func (s *Service) EscapingLinks(id wire.Identity) ([]string, error) {
	bad, err := archive.EscapingLinks(s.Root(id), s.policy)
	out := make([]string, len(bad))
	for i, le := range bad {
		out[i] = le.Error()
	}
	return out, err
}

// removeLeftovers removes what transfers cut short by a killed hostd left
// for each polecat hostd keeps a base for: staging directories in its
// data root and unfinished base contents (base-new-*.tar).
func (s *Service) removeLeftovers() {
	rigs, _ := os.ReadDir(s.cfg.Dir)
	for _, rig := range rigs {
		names, _ := os.ReadDir(filepath.Join(s.cfg.Dir, rig.Name()))
		for _, name := range names {
			id := wire.Identity{Rig: rig.Name(), Name: name.Name()}
			if !rig.IsDir() || !name.IsDir() || id.Validate() != nil {
				continue
			}
			tmp, _ := filepath.Glob(filepath.Join(s.baseDir(id), "base-new-*.tar"))
			for _, f := range tmp {
				_ = os.Remove(f)
			}
			staged, err := tree.RemoveStaging(s.Root(id), id.Name)
			if err != nil {
				s.log.Warn("sync: could not remove what a cut-short transfer left", "polecat", id, "err", err)
			}
			if n := len(tmp) + staged; n > 0 {
				s.log.Info("sync: removed what transfers cut short by a stopped hostd left", "polecat", id, "files", n)
			}
		}
	}
}
