// Package atomicfile replaces files so that a reader, or the next start
// after a crash, sees the old content or the new, never a torn mix.
package atomicfile

import (
	"fmt"
	"os"
	"path/filepath"
)

// Write replaces path with data. It creates the parent directory (0700)
// when missing, writes a temporary file beside path with mode already set
// (so the content is never readable with looser permissions), syncs it,
// renames it over path and syncs the directory so the rename survives a
// crash.
func Write(path string, data []byte, mode os.FileMode) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("creating directory for %s: %w", path, err)
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	defer os.Remove(tmp.Name()) // gone after the rename; cleans up on failure
	if err := writeSync(tmp, data, mode); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("replacing %s: %w", path, err)
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync() // best effort: some filesystems refuse to sync a directory
		d.Close()
	}
	return nil
}

// writeSync sets f's mode, writes data, syncs and closes it.
func writeSync(f *os.File, data []byte, mode os.FileMode) error {
	if err := f.Chmod(mode); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
