package merge

import (
	"fmt"

	"github.com/polecat-sidecar/sidecar/sync"
)

// judgeLinks refuses the merge if a symlink it places would lead out of
// the root, or to a path that does not cross, in the tree as it will be;
// or if a symlink already on the host (anywhere in the paths that cross)
// would come to, when it did not before: the merge changed a directory or
// link on its way.
func (pl *planner) judgeLinks() error {
	now := pl.t.View()
	after := func(rel string) (string, bool) {
		if e, ok := pl.final[rel]; ok {
			if e != nil && e.Type == sync.TypeSymlink {
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
func (pl *planner) policyJudge(view sync.LinkView, rel, target string) error {
	return pl.o.Policy.JudgeLink(view, rel, target)
}
