package archive

import (
	"errors"
	"io/fs"

	"github.com/polecat-sidecar/sidecar/sync"
	"github.com/polecat-sidecar/sidecar/sync/tree"
)

// EscapingLinks lists the symlinks under the paths p lets cross in the
// data root dir that lead outside it, or to a path that does not cross,
// through every link in the chain: the links Pack leaves out (hostd sync
// status shows them).
func EscapingLinks(dir string, p sync.Policy) ([]*sync.LinkError, error) {
	t, err := tree.OpenRead(dir)
	if err != nil || t == nil {
		return nil, err
	}
	defer t.Close()
	view := t.View()
	defer view.Close()
	var bad []*sync.LinkError
	err = t.Walk(p, func(rel string, fi fs.FileInfo) error {
		if fi.Mode()&fs.ModeSymlink == 0 {
			return nil
		}
		target, err := t.Readlink(rel)
		if err != nil {
			return err
		}
		var le *sync.LinkError
		if errors.As(p.JudgeLink(view, rel, target), &le) {
			bad = append(bad, le)
		}
		return nil
	}, nil)
	return bad, err
}
