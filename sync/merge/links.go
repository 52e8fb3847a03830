package merge

import (
	"fmt"
	"path"
	"strings"

	"github.com/polecat-sidecar/sidecar/sync"
)

// judgeLinks refuses the merge if a symlink it places would lead out of
// the root, or to a path that does not cross, in the tree as it will be;
// or if a symlink already on the host (anywhere in the paths that cross)
// would come to, when it did not before: the merge changed a directory or
// link on its way. Each link costs its path and the targets it walks, in
// both trees.
func (pl *planner) judgeLinks() error {
	now := pl.t.View()
	defer now.Close()
	after := pl.afterView(now)
	for _, m := range pl.linkMoves {
		if err := pl.policyJudge(after, m[1], pl.final[m[1]].Target); err != nil {
			return fmt.Errorf("refused: %w", err)
		}
	}
	for _, rel := range pl.hostLinks {
		target, isLink := linkAt(after, rel)
		if !isLink {
			continue // the merge replaces or removes it
		}
		if err := pl.policyJudge(after, rel, target); err != nil && pl.policyJudge(now, rel, target) == nil {
			return fmt.Errorf("refused: the host's %w once this transfer is applied", err)
		}
	}
	return nil
}

// policyJudge judges a link against the policy everything crossing obeys:
// the links the host keeps and those the container sends alike.
func (pl *planner) policyJudge(view sync.LinkView, rel, target string) error {
	return pl.o.Policy.JudgeLink(view, rel, target)
}

// planned is what the plan decided of one path.
type planned struct {
	// decided says the plan looked at the path: it will hold entry (nil:
	// nothing).
	decided bool
	entry   *sync.Entry
	// hides marks a directory the merge redirects or makes: nothing of
	// the host's is under it.
	hides bool
}

// afterView is the tree as the merge will leave it, as the sync.LinkView
// of its root: what the plan decided at each path it looked at, nothing
// of the host's under a directory it redirects or makes, and elsewhere
// the host's tree as it is (now).
func (pl *planner) afterView(now sync.LinkView) sync.LinkView {
	plan := &sync.PathTree[planned]{}
	for rel, e := range pl.final {
		n := plan.At(rel)
		n.Value.decided, n.Value.entry = true, e
	}
	for dir := range pl.redirect {
		plan.At(dir).Value.hides = true
	}
	for dir := range pl.fresh {
		plan.At(dir).Value.hides = true
	}
	return afterDir{plan: plan, host: now}
}

// afterDir is a directory of the tree as the merge will leave it: what
// the plan decided under it (nil: nothing) and the host's directory there
// (nil: nothing of the host's under it counts).
type afterDir struct {
	plan *sync.PathTree[planned]
	host sync.LinkView
}

// Child is what the directory will hold at name: the plan's entry if it
// decided one, else the host's.
func (d afterDir) Child(name string) (sync.LinkView, string, bool) {
	var plan *sync.PathTree[planned]
	if d.plan != nil {
		plan = d.plan.Child(name)
	}
	var host sync.LinkView
	var target string
	var isLink bool
	if d.host != nil {
		host, target, isLink = d.host.Child(name)
	}
	if plan != nil {
		if plan.Value.decided {
			target, isLink = "", false
			if e := plan.Value.entry; e != nil && e.Type == sync.TypeSymlink {
				target, isLink = e.Target, true
			}
		}
		if plan.Value.hides {
			host = nil
		}
	}
	if plan == nil && host == nil {
		return nil, target, isLink
	}
	return afterDir{plan: plan, host: host}, target, isLink
}

// linkAt is the symlink view holds at rel, looked up one name at a time
// from the root, following none: its target, and whether there is one.
func linkAt(view sync.LinkView, rel string) (target string, isLink bool) {
	dir := view
	if d := path.Dir(rel); d != "." {
		for name := range strings.SplitSeq(d, "/") {
			if dir, _, _ = dir.Child(name); dir == nil {
				return "", false
			}
		}
	}
	_, target, isLink = dir.Child(path.Base(rel))
	return target, isLink
}
