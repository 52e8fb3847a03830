package archive

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"time"

	"github.com/polecat-sidecar/sidecar/sync"
)

// racyMargin is how close to a pack's start (by the data root's own
// clock) a file's modification time may be and still be trusted by a
// later Since: a write in the same second (or, on a filesystem that keeps
// 2 s times, the same two) keeps both its size and its time to the second.
const racyMargin = 2 * time.Second

// TrackRacy lists in the manifest's Racy every file packed whose
// modification time is within racyMargin of the pack's start, or after
// it: a later write may keep the time and size the manifest records, so
// Since must read it again (as git treats an index entry as racily
// clean). Times are by the data root's clock, what a file made there is
// given, not this process's, which may be stepped or be another machine's
// (a bind mount); this process's only where no file can be made there.
func TrackRacy() PackOption {
	return func(pk *packer) { pk.racyFrom = rootNow(pk.rootDir).Add(-racyMargin) }
}

// MarkRacy lists in m's Racy every file m describes whose modification
// time is within racyMargin of now, or after it, by root's clock: for a
// tree just extracted into root with m's times (an install of hostd's
// data), whose files a write in the same second as their time could
// change unseen. A time after now is what a clock behind the sender's
// leaves.
func MarkRacy(root string, m *sync.Manifest) {
	from := rootNow(root).Add(-racyMargin)
	for _, e := range m.Entries {
		if e.Type == sync.TypeFile && !e.MTime.Before(from) {
			m.Racy = append(m.Racy, e.Path)
		}
	}
}

// rootNow is the data root's filesystem clock now: the modification time
// of a file made in dir and removed at once (its name is reserved, so no
// policy lets it cross should it ever be left behind).
func rootNow(dir string) time.Time {
	r, err := os.OpenRoot(dir)
	if err != nil {
		return time.Now()
	}
	defer r.Close()
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	name := sync.ReservedPrefix + "clock." + hex.EncodeToString(b)
	f, err := r.OpenFile(name, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return time.Now()
	}
	fi, err := f.Stat()
	_ = f.Close()
	_ = r.Remove(name)
	if err != nil {
		return time.Now()
	}
	return fi.ModTime()
}
