package data

import (
	"os"
	"slices"
	gosync "sync"

	datasync "github.com/polecat-sidecar/sidecar/sync"
	"github.com/polecat-sidecar/sidecar/sync/archive"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// baseCache keeps the polecats' bases in memory as the last transfer left
// them: the manifest and the index of the kept contents. A delta pull of
// a 10,000-file tree otherwise spent a fifth of hostd's CPU decoding
// base.json and reading every member's headers in base.tar again. An
// entry is used only while both files are the ones it was made from (the
// same file, size and modification time), so whatever else changes them
// is seen. It holds at most maxCachedEntries manifest entries across
// polecats, the least recently used going first. Safe for concurrent use.
type baseCache struct {
	mu      gosync.Mutex
	bases   map[wire.Identity]*cachedBase
	entries int    // manifest entries held
	clock   uint64 // counts uses, for least recently used
}

// cachedBase is one polecat's base in the cache.
type cachedBase struct {
	manifest  *datasync.Manifest
	index     *archive.ContentsIndex
	json, tar os.FileInfo // base.json and base.tar as they were
	used      uint64
}

// maxCachedEntries bounds the manifest entries the cache holds, across
// polecats: each costs about 300 bytes with its place in the contents
// index, so some 30 MB in all.
const maxCachedEntries = 100_000

// get is id's base when the cache holds it for the files json and tar:
// a copy of the manifest (the caller may change it) and the contents'
// index (which nobody changes).
func (c *baseCache) get(id wire.Identity, json, tar os.FileInfo) (*datasync.Manifest, *archive.ContentsIndex, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	b := c.bases[id]
	if b == nil || !sameFile(b.json, json) || !sameFile(b.tar, tar) {
		return nil, nil, false
	}
	c.clock++
	b.used = c.clock
	return cloneManifest(b.manifest), b.index, true
}

// put keeps m (a copy of it) and ix as id's base, made from the files
// json and tar, making room by dropping the least recently used bases. A
// base bigger than the whole cache is not kept.
func (c *baseCache) put(id wire.Identity, m *datasync.Manifest, ix *archive.ContentsIndex, json, tar os.FileInfo) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dropLocked(id)
	n := len(m.Entries)
	if n > maxCachedEntries {
		return
	}
	if c.bases == nil {
		c.bases = map[wire.Identity]*cachedBase{}
	}
	for c.entries+n > maxCachedEntries {
		var oldest wire.Identity
		var at uint64
		for k, b := range c.bases {
			if at == 0 || b.used < at {
				oldest, at = k, b.used
			}
		}
		c.dropLocked(oldest)
	}
	c.clock++
	c.bases[id] = &cachedBase{manifest: cloneManifest(m), index: ix, json: json, tar: tar, used: c.clock}
	c.entries += n
}

// drop forgets id's base.
func (c *baseCache) drop(id wire.Identity) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dropLocked(id)
}

func (c *baseCache) dropLocked(id wire.Identity) {
	if b := c.bases[id]; b != nil {
		c.entries -= len(b.manifest.Entries)
		delete(c.bases, id)
	}
}

// sameFile says whether a and b describe the same file, unchanged.
func sameFile(a, b os.FileInfo) bool {
	return a != nil && b != nil && os.SameFile(a, b) && a.Size() == b.Size() && a.ModTime().Equal(b.ModTime())
}

// cloneManifest copies m's entries (their strings are shared: nothing
// changes a string).
func cloneManifest(m *datasync.Manifest) *datasync.Manifest {
	return &datasync.Manifest{Version: m.Version, Entries: slices.Clone(m.Entries), Skipped: slices.Clone(m.Skipped)}
}
