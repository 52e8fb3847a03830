package merge

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"slices"

	"github.com/polecat-sidecar/sidecar/sync/tree"
)

// Apply does the plan: removals (deepest first), directories, then
// renames of what was staged, files before symlinks. Everything that could refuse the merge was
// checked while planning; what is left to fail is the disk.
func (p *Plan) Apply() error {
	t := p.t
	// The host may have changed while the merge was planned (an operator's
	// edit, made while text merges ran): then nothing is applied, and the
	// next transfer merges what is there. The paths are looked at in the
	// order a walk lists them, each directory's together, as the Tree
	// keeps few directories open.
	for _, rel := range slices.SortedFunc(maps.Keys(p.guard), comparePaths) {
		was := p.guard[rel]
		now, err := t.Lstat(rel)
		var pe *tree.PlainPathError // under a link or file the merge replaces: nothing there yet
		if err != nil && !errors.Is(err, fs.ErrNotExist) && !errors.As(err, &pe) {
			return fmt.Errorf("checking %s before applying: %w", rel, err)
		}
		if !sameState(was, now) {
			return fmt.Errorf("applying the transfer: %s changed on the host while it was merged, so nothing was applied: the next transfer merges it", rel)
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

// sameState says whether two looks at one path saw the same thing: both
// nothing, or the same file, kind, size, mode and modification time.
func sameState(a, b fs.FileInfo) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return os.SameFile(a, b) && a.Mode() == b.Mode() && a.Size() == b.Size() && a.ModTime().Equal(b.ModTime())
}
