package sync

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"time"
)

// What a merge did with one path.
const (
	Applied    = "applied"    // changed in the container only: taken
	Kept       = "kept"       // changed on the host only, or deleted in the container but changed here
	Merged     = "merged"     // changed on both, merged cleanly
	Conflicted = "conflicted" // changed on both, not mergeable: the host's stays, the container's is saved beside it
	Deleted    = "deleted"    // deleted in the container, unchanged here
)

// Change is what a merge did, or would do, with one path.
type Change struct {
	Path   string `json:"path"`
	Action string `json:"action"`
	// Copy is where a conflicted path's container version was saved.
	Copy string `json:"copy,omitempty"`
}

// MergeOptions say whose changes are merged, and when.
type MergeOptions struct {
	// Polecat names the container's polecat in conflict copies.
	Polecat string
	// Now stamps conflict copies.
	Now time.Time
	// DryRun reports what would be done and changes nothing.
	DryRun bool
	// MaxTextMerge bounds the files a three-way text merge is tried on
	// (bigger ones conflict); 8 MiB when zero.
	MaxTextMerge int64
	// Base holds the base's contents (what the host last sent or took,
	// kept by the caller: Contents, or a directory through os.DirFS);
	// without a path's base content a path changed on both sides
	// conflicts.
	Base fs.FS
}

// Merge takes a container's tree into the host's data root, file by file,
// against base, the manifest the host last sent the container. theirs is
// the container's manifest and theirsDir the verified tree Extract left in
// a staging directory on the same filesystem as host (files are moved from
// it). Only paths in base or theirs are considered; everything else under
// host is left alone. Each file is replaced by a rename, and merges of one
// host root are serialised by a lock beside it, so two polecats pulling
// into it at once cannot lose each other's changes: each sees what the
// other wrote as a change on the host.
func Merge(host string, base, theirs *Manifest, theirsDir string, o MergeOptions) ([]Change, error) {
	if o.MaxTextMerge <= 0 {
		o.MaxTextMerge = 8 << 20
	}
	unlock, err := lockRoot(host)
	if err != nil {
		return nil, err
	}
	defer unlock()
	b, t := index(base), index(theirs)
	paths := make([]string, 0, len(b)+len(t))
	for p := range b {
		paths = append(paths, p)
	}
	for p := range t {
		if _, ok := b[p]; !ok {
			paths = append(paths, p)
		}
	}
	slices.Sort(paths) // directories before what is under them
	var changes []Change
	for _, p := range paths {
		c, err := mergeOne(host, p, b[p], t[p], theirsDir, o)
		if err != nil {
			return changes, fmt.Errorf("merging %s: %w", p, err)
		}
		if c.Action != "" {
			changes = append(changes, c)
		}
	}
	return changes, nil
}

// mergeOne decides and does one path; an empty Action means nothing to do.
func mergeOne(host, rel string, base, theirs *Entry, theirsDir string, o MergeOptions) (Change, error) {
	c := Change{Path: rel}
	if same(theirs, base) { // unchanged in the container: the host's stands, whatever it is
		return c, nil
	}
	hostPath := filepath.Join(host, filepath.FromSlash(rel))
	cur, err := current(hostPath, rel)
	if err != nil {
		return c, err
	}
	switch {
	case same(cur, theirs): // both made the same change
		return c, nil
	case same(cur, base): // changed in the container only
		if theirs == nil {
			c.Action = Deleted
			if !o.DryRun && cur != nil && cur.Type != TypeDir {
				err = os.Remove(hostPath)
			}
			return c, err
		}
		c.Action = Applied
		if !o.DryRun {
			err = take(hostPath, filepath.Join(theirsDir, filepath.FromSlash(rel)), theirs)
		}
		return c, err
	case theirs == nil: // deleted in the container, changed here
		c.Action = Kept
		return c, nil
	}
	// Changed on both sides, differently.
	if theirs.Type == TypeDir || (cur != nil && cur.Type == TypeDir) {
		if cur == nil && !o.DryRun {
			err = os.MkdirAll(hostPath, theirs.Mode|0o700)
		}
		return c, err
	}
	theirsPath := filepath.Join(theirsDir, filepath.FromSlash(rel))
	if merged, ok, err := textMerge(hostPath, base, cur, theirs, theirsPath, o); err != nil {
		return c, err
	} else if ok {
		c.Action = Merged
		if !o.DryRun {
			err = writeAtomic(hostPath, merged, cur.Mode)
		}
		return c, err
	}
	c.Action = Conflicted
	c.Copy = fmt.Sprintf("%s.conflict-%s-%s", rel, o.Polecat, o.Now.UTC().Format("20060102T150405Z"))
	if !o.DryRun {
		err = take(filepath.Join(host, filepath.FromSlash(c.Copy)), theirsPath, theirs)
	}
	return c, err
}

// textMerge tries a three-way merge of a text file changed on both sides
// (git merge-file semantics); ok is false when it is not text, too big,
// missing on a side, or the hunks conflict.
func textMerge(hostPath string, base, cur, theirs *Entry, theirsPath string, o MergeOptions) (merged []byte, ok bool, err error) {
	max := o.MaxTextMerge
	if base == nil || cur == nil || base.Type != TypeFile || cur.Type != TypeFile || theirs.Type != TypeFile ||
		base.Size > max || cur.Size > max || theirs.Size > max {
		return nil, false, nil
	}
	basePath, err := baseFile(o.Base, base)
	if err != nil || basePath == "" {
		return nil, false, err // "": the base's content is not kept (or not intact)
	}
	defer os.Remove(basePath)
	for _, p := range []string{basePath, hostPath, theirsPath} {
		if !isText(p) {
			return nil, false, nil
		}
	}
	cmd := exec.Command("git", "merge-file", "-p", "-L", "host", "-L", "base", "-L", "container", hostPath, basePath, theirsPath)
	var out bytes.Buffer
	cmd.Stdout = &out
	err = cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return out.Bytes(), true, nil
	case errors.As(err, &ee) && ee.ExitCode() > 0 && ee.ExitCode() < 128:
		return nil, false, nil // conflicting hunks
	default:
		return nil, false, fmt.Errorf("git merge-file: %w", err)
	}
}

// current is what the host has at rel now, as a manifest entry (nil if
// nothing).
func current(p, rel string) (*Entry, error) {
	fi, err := os.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	e := &Entry{Path: rel, Mode: fi.Mode().Perm()}
	switch {
	case fi.IsDir():
		e.Type = TypeDir
	case fi.Mode()&fs.ModeSymlink != 0:
		e.Type, e.Mode = TypeSymlink, 0o777
		e.Target, err = os.Readlink(p)
	case fi.Mode().IsRegular():
		e.Type, e.Size = TypeFile, fi.Size()
		e.SHA256, err = hashFile(p)
	default:
		e.Type = "other"
	}
	return e, err
}

// same says whether two entries hold the same thing (content, kind,
// target; not times or modes).
func same(a, b *Entry) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return a.Type == b.Type && a.SHA256 == b.SHA256 && a.Target == b.Target
}

// take moves the container's version of a path into place at dst, by a
// rename (a directory is made instead).
func take(dst, src string, e *Entry) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	if e.Type == TypeDir {
		return os.MkdirAll(dst, e.Mode|0o700)
	}
	if fi, err := os.Lstat(dst); err == nil && fi.IsDir() {
		return fmt.Errorf("%s is a directory here and a %s in the container", dst, e.Type)
	}
	return os.Rename(src, dst)
}

// writeAtomic replaces p with b by a rename.
func writeAtomic(p string, b []byte, mode fs.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(p), "."+filepath.Base(p)+".merge-")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := errors.Join(f.Chmod(mode), f.Sync(), f.Close()); err != nil {
		return err
	}
	return os.Rename(f.Name(), p)
}

// isText says whether a file looks like text: no NUL in its first 8 KiB.
func isText(p string) bool {
	f, err := os.Open(p)
	if err != nil {
		return false
	}
	defer f.Close()
	buf := make([]byte, 8<<10)
	n, _ := io.ReadFull(f, buf)
	return !bytes.Contains(buf[:n], []byte{0})
}

func hashFile(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func hashBytes(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// index maps a manifest's paths to its entries.
func index(m *Manifest) map[string]*Entry {
	out := map[string]*Entry{}
	if m == nil {
		return out
	}
	for i := range m.Entries {
		out[m.Entries[i].Path] = &m.Entries[i]
	}
	return out
}

// lockRoot takes an exclusive lock beside a host data root.
func lockRoot(host string) (func(), error) {
	lock := filepath.Join(filepath.Dir(filepath.Clean(host)), "."+filepath.Base(host)+".sync-lock")
	f, err := os.OpenFile(lock, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("locking %s for a merge: %w", host, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("locking %s for a merge: %w", host, err)
	}
	return func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
}
