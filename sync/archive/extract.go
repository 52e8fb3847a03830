package archive

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"path/filepath"
	"strconv"

	"github.com/polecat-sidecar/sidecar/sync"
	"github.com/polecat-sidecar/sidecar/sync/tree"
)

// Extract installs under dst the archive made by Pack that r holds,
// trusting nothing: names clean, local, allowed by p; files, directories
// and symlinks only (no setuid, setgid), a link only if it leads, through
// every link, to a path that crosses; within lim; no duplicates; each
// member as the manifest, last, says. All is staged inside dst through a
// Tree, then renamed into place, never through a symlink, only when whole
// and valid: a bad archive changes nothing. Paths it does not name stay.
func Extract(ctx context.Context, r io.Reader, dst string, p sync.Policy, lim sync.Limits) (*sync.Manifest, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	t, err := tree.Open(dst)
	if err != nil {
		return nil, err
	}
	defer t.Close()
	staging, m, err := Stage(ctx, t, r, extractSender, p, lim, nil, false)
	if err != nil {
		return nil, err
	}
	defer t.RemoveAll(staging)
	if err := install(t, path.Join(staging, "tree"), m); err != nil {
		return nil, err
	}
	return m, nil
}

// extractSender names Extract's staging directories (the sender is hostd).
const extractSender = "hostd"

// Stage removes what an earlier transfer of who's left in t (a killed
// process's staging directory) and unpacks the archive from r, with every
// check UnpackSince makes, into the directory "tree" of a new staging
// directory in t, whose name it returns; on error nothing of it is left.
// Flat, "tree" holds only files and symlinks, named as FlatNames says.
// Extract and merge.Receive both start here.
func Stage(ctx context.Context, t *tree.Tree, r io.Reader, who string, p sync.Policy, lim sync.Limits, base *sync.Manifest, flat bool) (string, *sync.Manifest, error) {
	if _, err := t.RemoveStaging(who); err != nil {
		return "", nil, err
	}
	staging, err := t.Staging(who)
	if err != nil {
		return "", nil, err
	}
	m, err := unpack(ctx, r, filepath.Join(t.Dir(), filepath.FromSlash(path.Join(staging, "tree"))), p, lim, base, flat)
	if err != nil {
		_ = t.RemoveAll(staging)
		return "", nil, err
	}
	return staging, m, nil
}

// FlatNames maps each file and symlink an archive carried (m is its
// manifest, as Stage returned it) to its name in a flat staging tree:
// its place among the archive's members. A name is digits only, so none
// is a name the archive chose.
func FlatNames(m *sync.Manifest) map[string]string {
	names, k := map[string]string{}, 0
	for _, e := range m.Entries {
		if e.Unchanged {
			continue
		}
		if e.Type != sync.TypeDir {
			names[e.Path] = strconv.Itoa(k)
		}
		k++
	}
	return names
}

// install moves a verified staging tree (staging, in t) into place:
// directories made where missing, files and symlinks renamed over what
// was there, a file or symlink replaced by a directory or the reverse.
// A directory that is missing in t moves whole, in one rename, with
// everything under it. Nothing is installed through a symlink in t (the
// Tree refuses it); the whole archive is checked for that before
// anything moves.
func install(t *tree.Tree, staging string, m *sync.Manifest) error {
	dirs := map[string]bool{} // the directories the archive makes
	for _, e := range m.Entries {
		if e.Type == sync.TypeDir {
			dirs[e.Path] = true
		}
	}
	for _, e := range m.Entries {
		err := t.Parents(e.Path)
		var pe *tree.PlainPathError
		if errors.As(err, &pe) && dirs[pe.Through] {
			continue // a file or symlink the archive's directory replaces before anything goes under it
		}
		if err != nil {
			return err
		}
	}
	moved := map[string]bool{} // directories moved whole
	for _, e := range m.Entries {
		if under(e.Path, moved) {
			continue
		}
		fi, err := t.Lstat(e.Path)
		isDir := err == nil && fi.IsDir()
		if e.Type == sync.TypeDir {
			if isDir {
				continue
			}
			if err == nil {
				if err := t.Remove(e.Path); err != nil { // a file or symlink where a directory now goes
					return fmt.Errorf("installing %s: %w", e.Path, err)
				}
			}
			err = t.Rename(path.Join(staging, e.Path), e.Path)
			if errors.Is(err, fs.ErrExist) {
				// Made meanwhile, by something else writing in the root:
				// what is under it is installed one by one, beside what
				// that put there.
				err = t.MkdirAll(e.Path, 0o700)
			} else if err == nil {
				moved[e.Path] = true
			}
			if err != nil {
				return fmt.Errorf("installing %s: %w", e.Path, err)
			}
			continue
		}
		if isDir {
			if err := t.RemoveAll(e.Path); err != nil {
				return fmt.Errorf("installing %s over a directory: %w", e.Path, err)
			}
		}
		if err := t.Rename(path.Join(staging, e.Path), e.Path); err != nil {
			return fmt.Errorf("installing %s: %w", e.Path, err)
		}
	}
	for i := len(m.Entries) - 1; i >= 0; i-- {
		if e := m.Entries[i]; e.Type == sync.TypeDir {
			_ = t.SetMeta(e.Path, e.Mode, e.MTime)
		}
	}
	return nil
}

// under reports whether one of the directories above rel is in dirs.
func under(rel string, dirs map[string]bool) bool {
	for i := len(rel) - 1; i > 0; i-- {
		if rel[i] == '/' && dirs[rel[:i]] {
			return true
		}
	}
	return false
}
