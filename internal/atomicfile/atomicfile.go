// Package atomicfile replaces files so that a reader, or the next start
// after a crash, sees the old content or the new, never a torn mix: by
// path (Write), or inside an os.Root (WriteIn), which no name can lead
// out of.
package atomicfile

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"strconv"
)

// Write replaces path with data. It creates the parent directory (0700)
// when missing, then does what WriteIn does in it.
func Write(path string, data []byte, mode os.FileMode) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("creating directory for %s: %w", path, err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	defer root.Close()
	return write(root, filepath.Base(path), path, data, mode)
}

// WriteIn replaces name, a slash-separated path inside root whose
// directory exists, with data: it writes a temporary file beside name with
// mode already set (so the content is never readable with looser
// permissions), syncs it, renames it over name and syncs the directory so
// the rename survives a crash. Every step goes through root: nothing
// outside it is written, whatever symlinks lie inside.
func WriteIn(root *os.Root, name string, data []byte, mode os.FileMode) error {
	return write(root, name, name, data, mode)
}

// write is WriteIn, naming the file shown in its errors.
func write(root *os.Root, name, shown string, data []byte, mode os.FileMode) error {
	dir := path.Dir(name)
	tmp, f, err := createTemp(root, path.Join(dir, "."+path.Base(name)+"."))
	if err != nil {
		return fmt.Errorf("writing %s: %w", shown, err)
	}
	defer root.Remove(tmp) // gone after the rename; cleans up on failure
	if err := writeSync(f, data, mode); err != nil {
		return fmt.Errorf("writing %s: %w", shown, err)
	}
	if err := root.Rename(tmp, name); err != nil {
		return fmt.Errorf("replacing %s: %w", shown, err)
	}
	if d, err := root.Open(dir); err == nil {
		_ = d.Sync() // best effort: some filesystems refuse to sync a directory
		d.Close()
	}
	return nil
}

// createTemp makes a new file in root named prefix and a random number.
func createTemp(root *os.Root, prefix string) (string, *os.File, error) {
	for range 100 {
		name := prefix + strconv.FormatUint(uint64(rand.Uint32()), 10)
		f, err := root.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		return name, f, err
	}
	return "", nil, fmt.Errorf("no free temporary name %s*", prefix)
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
