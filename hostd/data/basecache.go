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
// them, manifest and contents' index: a delta pull of a 10,000-file tree
// spent a fifth of hostd's CPU reading them again. An entry is used only
// while both files are the ones it was made from (same file, size and
// modification time). It holds at most maxCachedBytes across polecats
// (baseCost), the least recently used going first. Safe for concurrent use.
type baseCache struct {
	mu    gosync.Mutex
	bases map[wire.Identity]*cachedBase
	bytes int64  // what the bases held cost
	clock uint64 // counts uses, for least recently used
}

// cachedBase is one polecat's base in the cache.
type cachedBase struct {
	manifest  *datasync.Manifest
	index     *archive.ContentsIndex
	json, tar os.FileInfo // base.json and base.tar as they were
	cost      int64       // baseCost
	used      uint64
}

// maxCachedBytes bounds what the cache holds across polecats, as baseCost
// counts it: about 20 bases of 10,000 files with paths of 30 bytes. A
// container chooses its paths' lengths (up to 4 KiB each, and as much
// again for a symlink's target), so the bound is in bytes, not entries.
const maxCachedBytes = 64 << 20

// baseCost is what holding m and its contents' index costs, near enough:
// each entry's fields and strings, and its path again as the index's key.
func baseCost(m *datasync.Manifest) int64 {
	const perEntry = 200 // an Entry, the index's member and map slots
	n := int64(0)
	for i := range m.Entries {
		e := &m.Entries[i]
		n += perEntry + int64(2*len(e.Path)+len(e.Target)+len(e.SHA256))
	}
	for _, p := range m.Skipped {
		n += 16 + int64(len(p))
	}
	return n
}

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
// base costing more than the whole cache is not kept.
func (c *baseCache) put(id wire.Identity, m *datasync.Manifest, ix *archive.ContentsIndex, json, tar os.FileInfo) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dropLocked(id)
	cost := baseCost(m)
	if cost > maxCachedBytes {
		return
	}
	if c.bases == nil {
		c.bases = map[wire.Identity]*cachedBase{}
	}
	for c.bytes+cost > maxCachedBytes {
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
	c.bases[id] = &cachedBase{manifest: cloneManifest(m), index: ix, json: json, tar: tar, cost: cost, used: c.clock}
	c.bytes += cost
}

// drop forgets id's base.
func (c *baseCache) drop(id wire.Identity) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dropLocked(id)
}

func (c *baseCache) dropLocked(id wire.Identity) {
	if b := c.bases[id]; b != nil {
		c.bytes -= b.cost
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
