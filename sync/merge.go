package sync

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"
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

// MergeOptions say whose changes are merged, and within what bounds.
type MergeOptions struct {
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
	Policy Policy
	// Base holds the base's contents (what the host last sent or took,
	// kept by the caller: Contents, or a directory through os.DirFS);
	// without a path's base content a path changed on both sides
	// conflicts.
	Base fs.FS
}

// DefaultMaxBothChanged is MergeOptions.MaxBothChanged's default: far
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

	t         *Tree
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
	o         MergeOptions
	tree      string // theirs, in t
	scratch   string // where merged files and merge inputs go, in t
	base      map[string]*Entry
	theirs    map[string]*Entry
	final     map[string]*Entry      // what each path looked at will hold (nil: nothing)
	redirect  map[string]string      // a directory of theirs that cannot go where it was, and where it goes instead
	fresh     map[string]bool        // directories the merge makes where the host has none: nothing is under them yet
	dirFiles  map[string]bool        // a host directory a file or symlink of theirs replaces: must be empty by then
	hostLinks []string               // every symlink in the root's paths that cross (and copies), judged again against the result
	hostNow   map[string]*Entry      // what the host holds now at each path looked at
	copies    map[string]string      // each path's conflict copy name
	seen      map[string]fs.FileInfo // what the host had at each path looked at (nil: nothing)
	both      int
	merges    int
	mergeIn   int64 // bytes text merges have read
}

// PlanMerge decides how to take a container's tree into the host's data
// root t, path by path, against base, the tree both sides last shared.
// theirs is the container's manifest and tree the directory in t where
// Unpack left it (files move from it); scratch is an empty directory in t
// for merged files. Only paths in base or theirs are looked at; the rest
// of t is left alone. Nothing under t is written but tree and scratch,
// and nothing is followed through a symlink. A merge that would leave a
// symlink leading out of the root or to a path that does not cross, that
// changes more paths on both sides than the bound, or whose text merges
// fail, is refused with the path named.
func PlanMerge(ctx context.Context, t *Tree, base, theirs *Manifest, tree, scratch string, o MergeOptions) (*Plan, error) {
	if o.MaxTextMerge <= 0 {
		o.MaxTextMerge = MaxKept
	}
	if o.MaxBothChanged <= 0 {
		o.MaxBothChanged = DefaultMaxBothChanged
	}
	survey, err := t.survey(o.Policy)
	if err != nil {
		return nil, fmt.Errorf("surveying the data root: %w", err)
	}
	pl := &planner{Plan: &Plan{t: t, Stored: survey.Bytes}, ctx: ctx, o: o, tree: tree, scratch: scratch, base: index(base), theirs: index(theirs),
		final: map[string]*Entry{}, redirect: map[string]string{}, fresh: map[string]bool{}, hostNow: map[string]*Entry{},
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
// is under it (a/b before a-b), as a walk would.
func comparePaths(a, b string) int {
	return strings.Compare(strings.ReplaceAll(a, "/", "\x00"), strings.ReplaceAll(b, "/", "\x00"))
}

// conflictName is where the container's version of rel goes when it
// cannot take rel's place: rel.conflict-<polecat>-<time>, with -2, -3, ...
// after it when that name is taken (on the host, by this merge or by this
// transfer), so a copy never replaces anything; a name too long for the
// filesystem is shortened, with a hash of what was cut. The same rel
// always gets the same name within one merge.
func (pl *planner) conflictName(rel string) string {
	if name, ok := pl.copies[rel]; ok {
		return name
	}
	suffix := "." + conflictInfix + pl.o.Polecat + "-" + pl.o.Now.UTC().Format("20060102T150405Z")
	dir, name := path.Split(rel)
	if room := nameMax - len(suffix) - len("-ffffffffffffffff"); len(name) > room {
		sum := sha256.Sum256([]byte(name))
		keep := max(room-9, 0)
		for keep > 0 && !utf8.RuneStart(name[keep]) {
			keep--
		}
		name = name[:keep] + "-" + hex.EncodeToString(sum[:4])
	}
	first := dir + name + suffix
	copyName := first
	for i := 2; pl.taken(copyName); i++ {
		if i > maxCopyTries { // the names are someone's doing: a random one, which nobody can have taken
			b := make([]byte, 8)
			_, _ = rand.Read(b)
			copyName = first + "-" + hex.EncodeToString(b)
			break
		}
		copyName = fmt.Sprintf("%s-%d", first, i)
	}
	pl.copies[rel] = copyName
	return copyName
}

// nameMax is the longest name of one path element the filesystems hostd
// runs on take; a copy's name keeps room for a 16-hex-digit suffix.
const nameMax = 255

// maxCopyTries is how many numbered names a conflict copy tries before it
// takes a random suffix.
const maxCopyTries = 20

// conflictInfix marks a conflict copy's name: rel.conflict-...
const conflictInfix = "conflict-"

// taken says whether the merge may not put a new entry at name: the host
// has something there, or the merge already placed something there.
func (pl *planner) taken(name string) bool {
	if _, ok := pl.final[name]; ok || pl.theirs[name] != nil || pl.base[name] != nil {
		return true
	}
	for _, c := range pl.copies {
		if c == name {
			return true
		}
	}
	_, err := pl.t.Lstat(name)
	return err == nil
}

// redirected is where rel goes when a directory above it was redirected.
func (pl *planner) redirected(rel string) (string, bool) {
	for dir := path.Dir(rel); dir != "."; dir = path.Dir(dir) {
		if to, ok := pl.redirect[dir]; ok {
			return to + strings.TrimPrefix(rel, dir), true
		}
	}
	return "", false
}

// underFresh says whether a directory above rel is one the merge makes.
func (pl *planner) underFresh(rel string) bool {
	for dir := path.Dir(rel); dir != "."; dir = path.Dir(dir) {
		if pl.fresh[dir] {
			return true
		}
	}
	return false
}

// one decides one path.
func (pl *planner) one(rel string) error {
	b, th := pl.base[rel], pl.theirs[rel]
	if to, ok := pl.redirected(rel); ok { // under a directory of theirs that went to a conflict copy
		if th != nil {
			return pl.place(rel, to, th)
		}
		return nil
	}
	if same(th, b) && !pl.underFresh(rel) {
		return nil // unchanged in the container: the host's stands, whatever it is (and is not read)
	}
	var cur *Entry
	var err error
	if !pl.underFresh(rel) {
		var fi fs.FileInfo
		cur, fi, err = pl.t.entryInfo(rel)
		pl.seen[rel] = fi
	}
	var pe *PlainPathError
	if errors.As(err, &pe) {
		// The host has a symlink or file above rel: nothing goes through
		// it. The container's version of the directory it is in goes to a
		// conflict copy instead, with rel in it.
		if th != nil {
			pl.redirect[pe.Through] = pl.conflictName(pe.Through)
			to, _ := pl.redirected(rel)
			pl.Changes = append(pl.Changes, Change{Path: pe.Through, Action: Conflicted, Copy: pl.redirect[pe.Through]})
			return pl.place(rel, to, th)
		}
		return nil
	}
	if err != nil {
		return err
	}
	pl.final[rel], pl.hostNow[rel] = cur, cur
	switch {
	case same(th, b), same(cur, th): // unchanged in the container (under a directory the merge makes), or both made the same change
		return nil
	case same(cur, b): // changed in the container only
		return pl.take(rel, cur, th)
	case th == nil: // deleted in the container, changed here
		pl.Changes = append(pl.Changes, Change{Path: rel, Action: Kept})
		return nil
	}
	return pl.bothChanged(rel, b, cur, th)
}

// take plans the container's change to a path the host has not changed.
func (pl *planner) take(rel string, cur, th *Entry) error {
	if th == nil {
		pl.Changes = append(pl.Changes, Change{Path: rel, Action: Deleted})
		pl.final[rel] = nil
		switch {
		case cur == nil:
		case cur.Type == TypeDir:
			pl.rmdirs = append(pl.rmdirs, rel)
		default:
			pl.removes = append(pl.removes, rel)
			if cur.Type == TypeFile {
				pl.Lost = append(pl.Lost, rel)
			}
			pl.Growth -= cur.Size + entryCost
		}
		return nil
	}
	pl.Changes = append(pl.Changes, Change{Path: rel, Action: Applied})
	if cur != nil && cur.Type == TypeFile && cur.Size > 0 && (th.Type != TypeFile || th.Size == 0) {
		pl.Lost = append(pl.Lost, rel) // its content goes as surely as by a deletion: made a directory, a link, or emptied
	}
	if cur != nil {
		// A file over a file is replaced by the rename. A change of kind
		// removes the old entry first, and so does a symlink being
		// replaced: while the merge is applied, no old link stays where
		// the judged tree has something else.
		switch {
		case cur.Type == TypeDir:
			pl.dirFiles[rel] = true // th is not a directory: same(cur, th) would hold
			pl.removes = append(pl.removes, rel)
		case th.Type == TypeDir, cur.Type == TypeSymlink:
			pl.removes = append(pl.removes, rel)
		}
		pl.Growth -= cur.Size + entryCost
	}
	return pl.place(rel, rel, th)
}

// place plans the container's entry for rel to go to to. A file the
// archive left out as unchanged is not staged: when it goes somewhere
// other than its own path (into a conflict copy), its content comes from
// the base's kept contents, and is left out when they do not have it (it
// is the base's, which the host had).
func (pl *planner) place(rel, to string, th *Entry) error {
	e := *th
	e.Path = to
	pl.final[to] = &e
	pl.Growth += th.Size + entryCost
	switch {
	case th.Type == TypeDir:
		pl.mkdirs = append(pl.mkdirs, to)
		if cur := pl.finalBefore(to); cur == nil || cur.Type != TypeDir {
			pl.fresh[to] = true
		}
	case th.Type == TypeSymlink:
		pl.linkMoves = append(pl.linkMoves, [2]string{path.Join(pl.tree, rel), to})
	case th.Unchanged:
		content, err := fs.ReadFile(pl.o.Base, th.Path)
		if pl.o.Base == nil || err != nil || hashBytes(content) != th.SHA256 {
			delete(pl.final, to)
			pl.Growth -= th.Size + entryCost
			return nil
		}
		pl.merges++
		staged := path.Join(pl.scratch, strconv.Itoa(pl.merges)+".unchanged")
		if err := pl.write(staged, content); err != nil {
			return err
		}
		pl.moves = append(pl.moves, [2]string{staged, to})
	default:
		pl.moves = append(pl.moves, [2]string{path.Join(pl.tree, rel), to})
	}
	return nil
}

// finalBefore is what the host holds at rel as far as the plan knows
// before placing something there: nil for a path it has not looked at
// (a conflict copy's name, or a path under a fresh directory).
func (pl *planner) finalBefore(rel string) *Entry {
	if e, ok := pl.hostNow[rel]; ok {
		return e
	}
	return nil
}

// bothChanged plans a path the host and the container changed differently.
func (pl *planner) bothChanged(rel string, b, cur, th *Entry) error {
	if pl.both++; pl.both > pl.o.MaxBothChanged {
		return &LimitError{Limit: "paths changed on both sides in one transfer", Setting: "sync.max_conflicts", Max: int64(pl.o.MaxBothChanged)}
	}
	if th.Type == TypeDir {
		if cur == nil { // deleted here, a directory there: it comes back
			pl.Changes = append(pl.Changes, Change{Path: rel, Action: Applied})
			return pl.place(rel, rel, th)
		}
		// A file or symlink here, a directory there: the host's stays and
		// the container's directory, with what is under it, goes beside it.
		pl.redirect[rel] = pl.conflictName(rel)
		pl.Changes = append(pl.Changes, Change{Path: rel, Action: Conflicted, Copy: pl.redirect[rel]})
		return pl.place(rel, pl.redirect[rel], th)
	}
	if cur != nil && cur.Type == TypeFile && th.Type == TypeFile {
		merged, ok, err := pl.textMerge(rel, b, cur, th)
		if err != nil {
			return err
		}
		if ok {
			pl.Changes = append(pl.Changes, Change{Path: rel, Action: Merged})
			pl.moves = append(pl.moves, [2]string{merged.path, rel})
			pl.Growth += merged.size - cur.Size
			pl.final[rel] = &Entry{Path: rel, Type: TypeFile}
			return nil
		}
	}
	c := Change{Path: rel, Action: Conflicted, Copy: pl.conflictName(rel)}
	pl.Changes = append(pl.Changes, c)
	return pl.place(rel, c.Copy, th)
}

// emptied turns back the file-over-directory changes whose directory would
// not be empty once the merge's removals are done (the host added to it):
// the container's file goes to a conflict copy instead, and the host's
// directory stays.
func (pl *planner) emptied() error {
	gone := map[string]bool{}
	for _, r := range pl.removes {
		gone[r] = true
	}
	for _, r := range pl.rmdirs {
		gone[r] = true
	}
	for dir := range pl.dirFiles {
		left, err := pl.leftUnder(dir, gone)
		if err != nil {
			return err
		}
		if !left {
			continue
		}
		pl.removes = slices.DeleteFunc(pl.removes, func(r string) bool { return r == dir })
		for i, c := range pl.Changes {
			if c.Path == dir && c.Action == Applied {
				pl.Changes[i] = Change{Path: dir, Action: Conflicted, Copy: pl.conflictName(dir)}
			}
		}
		for _, moves := range [][][2]string{pl.moves, pl.linkMoves} {
			for i, m := range moves {
				if m[1] == dir {
					moves[i][1] = pl.conflictName(dir)
					pl.final[pl.conflictName(dir)], pl.final[dir] = pl.final[dir], &Entry{Path: dir, Type: TypeDir}
				}
			}
		}
	}
	return nil
}

// leftUnder says whether anything under the host directory dir would
// remain after the removals in gone.
func (pl *planner) leftUnder(dir string, gone map[string]bool) (bool, error) {
	names, err := pl.t.ReadDir(dir)
	if err != nil {
		return false, err
	}
	for _, n := range names {
		p := dir + "/" + n
		if !gone[p] {
			return true, nil
		}
		if fi, err := pl.t.Lstat(p); err == nil && fi.IsDir() {
			if left, err := pl.leftUnder(p, gone); left || err != nil {
				return left, err
			}
		}
	}
	return false, nil
}

// judgeLinks refuses the merge if a symlink it places would lead out of
// the root, or to a path that does not cross, in the tree as it will be;
// or if a symlink already on the host (anywhere in the paths that cross)
// would come to, when it did not before: the merge changed a directory or
// link on its way.
func (pl *planner) judgeLinks() error {
	now := treeView(pl.t)
	after := func(rel string) (string, bool) {
		if e, ok := pl.final[rel]; ok {
			if e != nil && e.Type == TypeSymlink {
				return e.Target, true
			}
			return "", false
		}
		if _, ok := pl.redirected(rel); ok || pl.underFresh(rel) {
			return "", false
		}
		return now(rel)
	}
	for _, m := range pl.linkMoves {
		if err := pl.policyJudge(after, m[1], pl.final[m[1]].Target); err != nil {
			return fmt.Errorf("refused: %w", err)
		}
	}
	for _, rel := range pl.hostLinks {
		target, isLink := after(rel)
		if !isLink {
			continue // the merge replaces or removes it
		}
		if pl.policyJudge(after, rel, target) != nil && pl.policyJudge(now, rel, target) == nil {
			return fmt.Errorf("refused: the host's %w once this transfer is applied", pl.policyJudge(after, rel, target))
		}
	}
	return nil
}

// policyJudge judges a link against the policy everything crossing obeys:
// the links the host keeps and those the container sends alike.
func (pl *planner) policyJudge(view linkView, rel, target string) error {
	return pl.o.Policy.judgeLink(view, rel, target)
}

// Apply does the plan: removals (deepest first), directories, then
// renames of what was staged, files before symlinks. Everything that could refuse the merge was
// checked while planning; what is left to fail is the disk.
func (p *Plan) Apply() error {
	t := p.t
	// The host may have changed while the merge was planned (an operator's
	// edit, made while text merges ran): then nothing is applied, and the
	// next transfer merges what is there.
	for rel, was := range p.guard {
		now, err := t.Lstat(rel)
		var pe *PlainPathError // under a link or file the merge replaces: nothing there yet
		if err != nil && !errors.Is(err, fs.ErrNotExist) && !errors.As(err, &pe) {
			return fmt.Errorf("checking %s before applying: %w", rel, err)
		}
		if !sameState(was, now) {
			return fmt.Errorf("%s changed on the host while the transfer was merged; nothing was applied, the next transfer merges it", rel)
		}
	}
	optional := map[string]bool{}
	for _, r := range p.rmdirs {
		optional[r] = true
	}
	all := append(slices.Clone(p.removes), p.rmdirs...)
	slices.SortFunc(all, func(a, b string) int { return comparePaths(b, a) }) // deepest first
	for _, r := range all {
		err := t.Remove(r) // a directory is empty by now: what was under it came first
		switch {
		case err == nil, errors.Is(err, fs.ErrNotExist):
		case optional[r]: // a directory the container deleted, which the host added to: it stays
		default:
			return fmt.Errorf("removing %s: %w", r, err)
		}
	}
	for _, d := range p.mkdirs {
		if err := t.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("creating %s: %w", d, err)
		}
	}
	// Files first, symlinks last: a link is placed only into the tree it
	// was judged against, and while the merge is under way (or if the disk
	// fails it half-way) a link it has not yet placed is missing, so
	// nothing resolves through what the judged tree does not have.
	for _, m := range slices.Concat(p.moves, p.linkMoves) {
		if dir := path.Dir(m[1]); dir != "." {
			if err := t.MkdirAll(dir, 0o755); err != nil {
				return fmt.Errorf("creating %s: %w", dir, err)
			}
		}
		if err := t.Rename(m[0], m[1]); err != nil {
			return fmt.Errorf("installing %s: %w", m[1], err)
		}
	}
	return nil
}

// maxMergeInput bounds what one merge's text merges read, all told: past
// it, files changed on both sides conflict rather than merge, so a merge's
// CPU is bounded whatever git merge-file makes of its input.
const maxMergeInput = 64 << 20

// sameState says whether two looks at one path saw the same thing: both
// nothing, or the same file, kind, size, mode and modification time.
func sameState(a, b fs.FileInfo) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return os.SameFile(a, b) && a.Mode() == b.Mode() && a.Size() == b.Size() && a.ModTime().Equal(b.ModTime())
}

// staged is a merged file written to the scratch directory.
type staged struct {
	path string
	size int64
}

// textMerge tries a three-way merge of a text file changed on both sides
// (git merge-file semantics), writing the result to the scratch
// directory; ok is false when it is not text, too big, missing on a side,
// the base's content is not kept, or the hunks conflict. git reads only
// copies the merge made in scratch, never a path in the host's tree.
func (pl *planner) textMerge(rel string, base, cur, theirs *Entry) (staged, bool, error) {
	max := pl.o.MaxTextMerge
	if base == nil || base.Type != TypeFile || base.Size > max || cur.Size > max || theirs.Size > max || pl.o.Base == nil ||
		pl.mergeIn+base.Size+cur.Size+theirs.Size > maxMergeInput {
		return staged{}, false, nil
	}
	pl.mergeIn += base.Size + cur.Size + theirs.Size
	baseContent, err := fs.ReadFile(pl.o.Base, base.Path)
	if err != nil || hashBytes(baseContent) != base.SHA256 {
		return staged{}, false, nil // not kept, or not intact
	}
	pl.merges++
	n := strconv.Itoa(pl.merges)
	hostCopy, basePath, out := path.Join(pl.scratch, n+".host"), path.Join(pl.scratch, n+".base"), path.Join(pl.scratch, n+".merged")
	if err := pl.copyHost(rel, hostCopy); err != nil {
		return staged{}, false, err
	}
	if err := pl.write(basePath, baseContent); err != nil {
		return staged{}, false, err
	}
	abs := func(rel string) string { return filepath.Join(pl.t.Dir(), filepath.FromSlash(rel)) }
	theirsPath := path.Join(pl.tree, rel)
	for _, p := range []string{basePath, hostCopy, theirsPath} {
		if !pl.isText(p) {
			return staged{}, false, nil
		}
	}
	if pl.o.Gate != nil {
		release, err := pl.o.Gate()
		if err != nil {
			return staged{}, false, err
		}
		defer release()
	}
	cmd := exec.CommandContext(pl.ctx, "git", "merge-file", "-p", "-L", "host", "-L", "base", "-L", "container", abs(hostCopy), abs(basePath), abs(theirsPath))
	var merged bytes.Buffer
	cmd.Stdout = &merged
	err = cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee) && ee.ExitCode() > 0 && ee.ExitCode() < 128:
		return staged{}, false, nil // conflicting hunks
	default:
		return staged{}, false, fmt.Errorf("git merge-file: %w", err)
	}
	if err := pl.write(out, merged.Bytes()); err != nil {
		return staged{}, false, err
	}
	if err := pl.t.SetMeta(out, cur.Mode, time.Time{}); err != nil {
		return staged{}, false, err
	}
	return staged{path: out, size: int64(merged.Len())}, true, nil
}

// copyHost copies the host's file at rel to scratch.
func (pl *planner) copyHost(rel, to string) error {
	in, err := pl.t.Open(rel)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := pl.t.Create(to, 0o600)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	return errors.Join(err, out.Close())
}

// write writes b to a new file in scratch.
func (pl *planner) write(rel string, b []byte) error {
	f, err := pl.t.Create(rel, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	return errors.Join(err, f.Close())
}

// isText says whether a file in t looks like text: no NUL in its first
// 8 KiB.
func (pl *planner) isText(rel string) bool {
	f, err := pl.t.Open(rel)
	if err != nil {
		return false
	}
	defer f.Close()
	buf := make([]byte, 8<<10)
	n, _ := io.ReadFull(f, buf)
	return !bytes.Contains(buf[:n], []byte{0})
}

// same says whether two entries hold the same thing (content, kind,
// target; not times or modes).
func same(a, b *Entry) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return a.Type == b.Type && a.SHA256 == b.SHA256 && a.Target == b.Target
}

func hashBytes(b []byte) string {
	h, _ := hashReader(bytes.NewReader(b))
	return h
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

// lock takes an exclusive lock on the tree's directory itself (flock on
// its descriptor: no file is made), held until unlock, so that merges
// into one root (a root shared by a rig's polecats) are done one at a
// time: each sees what the other wrote as a change on the host. It waits
// for another merge as long as ctx lets it.
func (t *Tree) lock(ctx context.Context) (unlock func(), err error) {
	f, err := t.root.Open(".")
	if err != nil {
		return nil, fmt.Errorf("locking %s for a merge: %w", t.dir, err)
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("locking %s for a merge: %w", t.dir, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("waiting for another transfer into %s to finish: %w", t.dir, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}
