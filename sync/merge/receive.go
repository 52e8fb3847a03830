package merge

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"

	"github.com/polecat-sidecar/sidecar/sync"
	"github.com/polecat-sidecar/sidecar/sync/archive"
	"github.com/polecat-sidecar/sidecar/sync/tree"
)

// Incoming is a container's archive received into a host data root and
// not yet merged: unpacked and verified into a staging directory inside
// the root, the root locked against other merges. Plan its merge, look at
// the plan, Apply it or not, then Close, which removes what is staged.
type Incoming struct {
	// Manifest is the container's tree as the archive gave it (files it
	// left out as unchanged marked so).
	Manifest *sync.Manifest
	tree     *tree.Tree
	staging  string
	flat     map[string]string // each staged file's and symlink's name (archive.FlatNames)
	unlock   func()
}

// Receive locks the host data root host (creating it if need be),
// removes what an earlier transfer of who's left there (a killed
// process's staging directory), and unpacks the archive from r into a new
// staging directory inside it, with every check archive.Unpack makes. who names
// the sender (a polecat) in staging names.
func Receive(ctx context.Context, r io.Reader, host, who string, p sync.Policy, lim sync.Limits, base *sync.Manifest) (_ *Incoming, err error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	t, err := tree.Open(host)
	if err != nil {
		return nil, err
	}
	unlock, err := t.Lock(ctx)
	if err != nil {
		t.Close()
		return nil, err
	}
	in := &Incoming{tree: t, unlock: unlock}
	defer func() {
		if err != nil {
			in.Close()
		}
	}()
	// Staged flat: making and removing the archive's directories cost
	// more than the files in a delta pull (docs/benchmarks.md, issue 40).
	if in.staging, in.Manifest, err = archive.Stage(ctx, t, r, who, p, lim, base, true); err != nil {
		return nil, err
	}
	in.flat = archive.FlatNames(in.Manifest)
	if err := t.MkdirAll(path.Join(in.staging, "scratch"), 0o700); err != nil {
		return nil, err
	}
	return in, nil
}

// Staged is what the archive carried, each file by its path in the tree
// (for archive.WriteContents).
func (in *Incoming) Staged() fs.FS {
	return stagedFS{dir: filepath.Join(in.tree.Dir(), filepath.FromSlash(path.Join(in.staging, "tree"))), names: in.flat}
}

// stagedFS opens a flat staging tree's files by their paths in the tree.
type stagedFS struct {
	dir   string
	names map[string]string
}

// Open opens the staged file of the tree's path name.
func (s stagedFS) Open(name string) (fs.File, error) {
	n, ok := s.names[name]
	if !ok {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	return os.Open(filepath.Join(s.dir, n))
}

// Plan decides the merge of what came into the host's tree against base,
// the tree both sides last shared, path by path. Only paths in base or in
// what came are looked at; the rest of the root is left alone, and nothing
// in it is written before Apply. A merge that would leave a symlink
// leading out of the root or to a path that does not cross, that changes
// more paths on both sides than the bound, or whose text merges fail, is
// refused with the path named.
func (in *Incoming) Plan(ctx context.Context, base *sync.Manifest, o Options) (*Plan, error) {
	if in.Manifest == nil {
		return nil, errors.New("nothing was received to merge")
	}
	return planMerge(ctx, in.tree, base, in.Manifest, stagedTree{dir: path.Join(in.staging, "tree"), names: in.flat}, path.Join(in.staging, "scratch"), o)
}

// Close removes what is still staged and unlocks the root.
func (in *Incoming) Close() error {
	var err error
	if in.staging != "" {
		if rerr := in.tree.RemoveAll(in.staging); rerr != nil {
			err = fmt.Errorf("removing the staging directory %s: %w", in.staging, rerr)
		}
		in.staging = ""
	}
	if in.unlock != nil {
		in.unlock()
		in.unlock = nil
	}
	return errors.Join(err, in.tree.Close())
}
