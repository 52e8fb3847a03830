package merge

import (
	"errors"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/polecat-sidecar/sidecar/sync"
	"github.com/polecat-sidecar/sidecar/sync/archive"
	"github.com/polecat-sidecar/sidecar/sync/tree"
)

// redirected is where rel goes when a directory above it was redirected
// (the nearest, should there be more).
func (pl *planner) redirected(rel string) (string, bool) {
	dir := pl.above(parent(rel)).redirected
	if dir == "" {
		return "", false
	}
	return pl.redirect[dir] + rel[len(dir):], true
}

// underFresh says whether a directory above rel is one the merge makes.
func (pl *planner) underFresh(rel string) bool {
	return pl.above(parent(rel)).fresh
}

// above is what the plan decided of a directory and those above it.
type above struct {
	redirected string // the nearest redirected ("" when none is)
	fresh      bool   // one is a directory the merge makes
}

// above is what the plan decided of dir and the directories above it,
// each worked out once from its parent's and kept (pl.aboves), so that
// asking of every path costs a lookup, not a walk up to the top. A
// decision about a directory already asked of (decide) forgets what was
// kept; the sorted walk makes every decision about a directory before
// asking of it or of anything under it, so this is rare.
func (pl *planner) above(dir string) above {
	if dir == "." {
		return above{}
	}
	if a, ok := pl.aboves[dir]; ok {
		return a
	}
	a := pl.above(parent(dir))
	if _, ok := pl.redirect[dir]; ok {
		a.redirected = dir
	}
	a.fresh = a.fresh || pl.fresh[dir]
	pl.aboves[dir] = a
	return a
}

// decide records that the merge redirects dir to a conflict copy (to not
// empty) or makes it (fresh).
func (pl *planner) decide(dir, to string, fresh bool) {
	if _, asked := pl.aboves[dir]; asked {
		clear(pl.aboves) // the kept answers of dir and below it are wrong now: all go
	}
	if to != "" {
		pl.redirect[dir] = to
	}
	if fresh {
		pl.fresh[dir] = true
	}
}

// parent is the directory rel is in ("." at the top).
func parent(rel string) string {
	if i := strings.LastIndexByte(rel, '/'); i >= 0 {
		return rel[:i]
	}
	return "."
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
	var cur *sync.Entry
	var err error
	if !pl.underFresh(rel) {
		var fi fs.FileInfo
		cur, fi, err = pl.t.Entry(rel)
		pl.seen[rel] = fi
	}
	var pe *tree.PlainPathError
	if errors.As(err, &pe) {
		// The host has a symlink or file above rel: nothing goes through
		// it. The container's version of the directory it is in goes to a
		// conflict copy instead, with rel in it.
		if th != nil {
			pl.decide(pe.Through, pl.conflictName(pe.Through), false)
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
func (pl *planner) take(rel string, cur, th *sync.Entry) error {
	if th == nil {
		pl.Changes = append(pl.Changes, Change{Path: rel, Action: Deleted})
		pl.final[rel] = nil
		switch {
		case cur == nil:
		case cur.Type == sync.TypeDir:
			pl.rmdirs = append(pl.rmdirs, rel)
		default:
			pl.removes = append(pl.removes, rel)
			if cur.Type == sync.TypeFile {
				pl.Lost = append(pl.Lost, rel)
			}
			pl.Growth -= cur.Size + entryCost
		}
		return nil
	}
	pl.Changes = append(pl.Changes, Change{Path: rel, Action: Applied})
	if cur != nil && cur.Type == sync.TypeFile && cur.Size > 0 && (th.Type != sync.TypeFile || th.Size == 0) {
		pl.Lost = append(pl.Lost, rel) // its content goes as surely as by a deletion: made a directory, a link, or emptied
	}
	if cur != nil {
		// A file over a file is replaced by the rename. A change of kind
		// removes the old entry first, and so does a symlink being
		// replaced: while the merge is applied, no old link stays where
		// the judged tree has something else.
		switch {
		case cur.Type == sync.TypeDir:
			pl.dirFiles[rel] = true // th is not a directory: same(cur, th) would hold
			pl.removes = append(pl.removes, rel)
		case th.Type == sync.TypeDir, cur.Type == sync.TypeSymlink:
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
func (pl *planner) place(rel, to string, th *sync.Entry) error {
	e := *th
	e.Path = to
	pl.final[to] = &e
	pl.Growth += th.Size + entryCost
	switch {
	case th.Type == sync.TypeDir:
		pl.mkdirs = append(pl.mkdirs, to)
		if cur := pl.finalBefore(to); cur == nil || cur.Type != sync.TypeDir {
			pl.decide(to, "", true)
		}
	case th.Type == sync.TypeSymlink:
		pl.linkMoves = append(pl.linkMoves, [2]string{pl.tree.at(rel), to})
	case th.Unchanged:
		content, ok := archive.Kept(pl.o.Base, th)
		if !ok {
			delete(pl.final, to)
			pl.Growth -= th.Size + entryCost
			return nil
		}
		pl.merges++
		staged := path.Join(pl.scratch, strconv.Itoa(pl.merges)+".unchanged")
		if err := pl.t.WriteFile(staged, content, 0o600); err != nil {
			return err
		}
		pl.moves = append(pl.moves, [2]string{staged, to})
	default:
		pl.moves = append(pl.moves, [2]string{pl.tree.at(rel), to})
	}
	return nil
}

// finalBefore is what the host holds at rel as far as the plan knows
// before placing something there: nil for a path it has not looked at
// (a conflict copy's name, or a path under a fresh directory).
func (pl *planner) finalBefore(rel string) *sync.Entry {
	if e, ok := pl.hostNow[rel]; ok {
		return e
	}
	return nil
}

// bothChanged plans a path the host and the container changed differently.
func (pl *planner) bothChanged(rel string, b, cur, th *sync.Entry) error {
	if pl.both++; pl.both > pl.o.MaxBothChanged {
		return &sync.LimitError{Limit: "paths changed on both sides in one transfer", Setting: "sync.max_conflicts", Max: int64(pl.o.MaxBothChanged)}
	}
	if th.Type == sync.TypeDir {
		if cur == nil { // deleted here, a directory there: it comes back
			pl.Changes = append(pl.Changes, Change{Path: rel, Action: Applied})
			return pl.place(rel, rel, th)
		}
		// A file or symlink here, a directory there: the host's stays and
		// the container's directory, with what is under it, goes beside it.
		pl.decide(rel, pl.conflictName(rel), false)
		pl.Changes = append(pl.Changes, Change{Path: rel, Action: Conflicted, Copy: pl.redirect[rel]})
		return pl.place(rel, pl.redirect[rel], th)
	}
	if cur != nil && cur.Type == sync.TypeFile && th.Type == sync.TypeFile {
		merged, ok, err := pl.textMerge(rel, b, cur, th)
		if err != nil {
			return err
		}
		if ok {
			pl.Changes = append(pl.Changes, Change{Path: rel, Action: Merged})
			pl.moves = append(pl.moves, [2]string{merged.path, rel})
			pl.Growth += merged.size - cur.Size
			pl.final[rel] = &sync.Entry{Path: rel, Type: sync.TypeFile}
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
					pl.final[pl.conflictName(dir)], pl.final[dir] = pl.final[dir], &sync.Entry{Path: dir, Type: sync.TypeDir}
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

// same says whether two entries hold the same thing (content, kind,
// target; not times or modes).
func same(a, b *sync.Entry) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return a.Type == b.Type && a.SHA256 == b.SHA256 && a.Target == b.Target
}
