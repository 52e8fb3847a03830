// Package merge takes a container's archive into a host data root: Receive
// unpacks it into a staging directory inside the root (archive.Stage) with
// the root locked, and a Plan decides, path by path against the base both
// sides last shared, what is applied, kept, merged (git merge-file),
// conflicted (the container's version saved beside the host's) or deleted,
// with every check made before Apply changes anything. Every path is
// reached through a tree.Tree, so nothing outside the root is touched.
package merge

import (
	"cmp"
	"context"
	"fmt"
	"io/fs"
	"maps"
	"path"
	"slices"
	"time"

	"github.com/polecat-sidecar/sidecar/sync"
	"github.com/polecat-sidecar/sidecar/sync/archive"
	"github.com/polecat-sidecar/sidecar/sync/tree"
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

// Options say whose changes are merged, and within what bounds.
type Options struct {
	// Polecat names the container's polecat in conflict copies.
	Polecat string
	// Now stamps conflict copies.
	Now time.Time
	// MaxTextMerge bounds the files a three-way text merge is tried on
	// (bigger ones conflict); MaxKept when zero.
	MaxTextMerge int64
	// MaxBothChanged bounds the paths changed on both sides that one merge
	// takes (each a git merge-file run or a conflict copy); a merge with
	// more is refused whole (sync.max_conflicts). DefaultMaxBothChanged
	// when zero.
	MaxBothChanged int
	// Gate, when set, is held around each git merge-file run: the caller's
	// process budget.
	Gate func() (release func(), err error)
	// Policy is the policy both sides apply: a symlink the merge leaves
	// must lead to a path it lets cross.
	Policy sync.Policy
	// Base holds the base's contents (what the host last sent or took,
	// kept by the caller: archive.Contents, or a directory through
	// os.DirFS);
	// without a path's base content a path changed on both sides
	// conflicts.
	Base fs.FS
}

// DefaultMaxBothChanged is Options.MaxBothChanged's default: far
// more paths than two people change on both sides between two exchanges,
// and few enough git merge-file runs to take seconds, not minutes.
const DefaultMaxBothChanged = 500

// Plan is a merge decided but not yet done: every check made, every
// merged or conflicting file already staged, so that Apply only removes,
// makes directories and renames. The caller can look at what it would do
// (Changes, Growth, Deletes) and refuse it, in which case nothing changed.
type Plan struct {
	// Changes is what the merge does, path by path.
	Changes []Change
	// Growth is how many bytes the root's files grow by (negative when
	// they shrink), conflict copies and merged files included.
	Growth int64
	// Stored is what the root held for the polecat before the merge, as
	// a storage budget counts it (see Survey).
	Stored int64
	// Lost lists the host's regular files whose content the merge
	// takes away because the container deleted them, emptied them or made
	// them something else (a symlink holds no data to lose).
	Lost []string

	t         *tree.Tree
	removes   []string // removed deepest first: files, symlinks, directories that must be empty by then
	rmdirs    []string // directories the container deleted: removed if empty
	mkdirs    []string
	moves     [][2]string // from (staged), to: files
	linkMoves [][2]string // the same for symlinks, placed last
	// guard is what the host had at each path the plan changes when it
	// was planned (nil: nothing): Apply checks it first.
	guard map[string]fs.FileInfo
}

// planner is one merge being decided.
type planner struct {
	*Plan
	ctx       context.Context
	o         Options
	tree      stagedTree // theirs, in t
	scratch   string     // where merged files and merge inputs go, in t
	base      map[string]*sync.Entry
	theirs    map[string]*sync.Entry
	final     map[string]*sync.Entry // what each path looked at will hold (nil: nothing)
	redirect  map[string]string      // a directory of theirs that cannot go where it was, and where it goes instead
	fresh     map[string]bool        // directories the merge makes where the host has none: nothing is under them yet
	aboves    map[string]above       // what redirect and fresh say of each directory asked of and those above it (above)
	dirFiles  map[string]bool        // a host directory a file or symlink of theirs replaces: must be empty by then
	hostLinks []string               // every symlink in the root's paths that cross (and copies), judged again against the result
	hostNow   map[string]*sync.Entry // what the host holds now at each path looked at
	copies    map[string]string      // each path's conflict copy name
	seen      map[string]fs.FileInfo // what the host had at each path looked at (nil: nothing)
	both      int
	merges    int
	mergeIn   int64 // bytes text merges have read
}

// planMerge decides, path by path, how to take a container's tree (theirs,
// staged by archive.Stage in theirTree) into the host's data root t
// against base, the tree both sides last shared; scratch is an empty
// directory in t for merged files. It looks at paths in base (those
// o.Policy still lets cross) or theirs, writes only theirTree and scratch,
// follows no link, and refuses, naming the path, a link out or to a path
// that does not cross, too many paths both sides changed, a failed merge.
func planMerge(ctx context.Context, t *tree.Tree, base, theirs *sync.Manifest, theirTree stagedTree, scratch string, o Options) (*Plan, error) {
	if o.MaxTextMerge <= 0 {
		o.MaxTextMerge = archive.MaxKept
	}
	if o.MaxBothChanged <= 0 {
		o.MaxBothChanged = DefaultMaxBothChanged
	}
	survey, err := surveyTree(t, o.Policy)
	if err != nil {
		return nil, fmt.Errorf("surveying the data root: %w", err)
	}
	pl := &planner{Plan: &Plan{t: t, Stored: survey.Bytes}, ctx: ctx, o: o, tree: theirTree, scratch: scratch, base: crossing(base.Index(), o.Policy), theirs: theirs.Index(),
		final: map[string]*sync.Entry{}, redirect: map[string]string{}, fresh: map[string]bool{}, aboves: map[string]above{}, hostNow: map[string]*sync.Entry{},
		copies: map[string]string{}, seen: map[string]fs.FileInfo{}, dirFiles: map[string]bool{}, hostLinks: survey.Links}
	paths := make([]string, 0, len(pl.base)+len(pl.theirs))
	for p := range pl.base {
		paths = append(paths, p)
	}
	for p := range pl.theirs {
		if _, ok := pl.base[p]; !ok {
			paths = append(paths, p)
		}
	}
	slices.SortFunc(paths, comparePaths)
	for _, p := range paths {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("merging: %w", err)
		}
		if err := pl.one(p); err != nil {
			return nil, fmt.Errorf("merging %s: %w", p, err)
		}
	}
	if err := pl.emptied(); err != nil {
		return nil, err
	}
	if err := pl.distinctTargets(); err != nil {
		return nil, err
	}
	if err := pl.judgeLinks(); err != nil {
		return nil, err
	}
	pl.guard = map[string]fs.FileInfo{}
	for _, to := range slices.Concat(pl.removes, pl.rmdirs, pl.mkdirs) {
		pl.guard[to] = pl.seen[to]
	}
	for _, m := range slices.Concat(pl.moves, pl.linkMoves) {
		pl.guard[m[1]] = pl.seen[m[1]]
	}
	return pl.Plan, nil
}

// stagedTree is where archive.Stage put what came, flat: each file's and
// symlink's name in dir by its path (archive.FlatNames).
type stagedTree struct {
	dir   string
	names map[string]string
}

// at is where the file or symlink rel of theirs is staged, in t.
func (s stagedTree) at(rel string) string { return path.Join(s.dir, s.names[rel]) }

// crossing is base without the paths p does not let cross (nor, for a
// directory, lead to): a path the policy has stopped covering since the
// base was taken is no longer the transfer's, and its absence from the
// container's tree is not a deletion.
func crossing(base map[string]*sync.Entry, p sync.Policy) map[string]*sync.Entry {
	maps.DeleteFunc(base, func(rel string, e *sync.Entry) bool {
		return !p.Allowed(rel) && (e.Type != sync.TypeDir || !p.Leads(rel))
	})
	return base
}

// distinctTargets refuses a plan that would put two entries at one path
// (a name of the container's that is also a conflict copy's, say): the
// second would replace the first.
func (pl *planner) distinctTargets() error {
	seen := map[string]bool{}
	for _, to := range pl.mkdirs {
		seen[to] = true
	}
	for _, m := range slices.Concat(pl.moves, pl.linkMoves) {
		if seen[m[1]] {
			return fmt.Errorf("refused: two entries of this transfer would go to %s", m[1])
		}
		seen[m[1]] = true
	}
	return nil
}

// comparePaths orders paths so that a directory comes right before what
// is under it (a/b before a-b), as a walk would: byte by byte, with '/'
// below every other byte. It allocates nothing; a merge sorts every path
// of the tree with it.
func comparePaths(a, b string) int {
	for i := range min(len(a), len(b)) {
		ca, cb := a[i], b[i]
		if ca == cb {
			continue
		}
		if ca == '/' {
			return -1
		}
		if cb == '/' {
			return 1
		}
		return cmp.Compare(ca, cb)
	}
	return cmp.Compare(len(a), len(b))
}
