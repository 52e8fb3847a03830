package sync

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"path/filepath"
)

// Incoming is a container's archive received into a host data root and
// not yet merged: unpacked and verified into a staging directory inside
// the root, the root locked against other merges. Plan its merge, look at
// the plan, Apply it or not, then Close, which removes what is staged.
type Incoming struct {
	// Manifest is the container's tree as the archive gave it (files it
	// left out as unchanged marked so).
	Manifest *Manifest
	tree     *Tree
	staging  string
	unlock   func()
}

// Receive locks the host data root host (creating it if need be),
// removes what an earlier transfer of who's left there (a killed
// process's staging directory), and unpacks the archive from r into a new
// staging directory inside it, with every check Unpack makes. who names
// the sender (a polecat) in staging names.
func Receive(ctx context.Context, r io.Reader, host, who string, p Policy, lim Limits, base *Manifest) (_ *Incoming, err error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	t, err := OpenTree(host)
	if err != nil {
		return nil, err
	}
	unlock, err := t.lock(ctx)
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
	if in.staging, in.Manifest, err = t.stage(ctx, r, who, p, lim, base); err != nil {
		return nil, err
	}
	if err := t.MkdirAll(path.Join(in.staging, "scratch"), 0o700); err != nil {
		return nil, err
	}
	return in, nil
}

// stage removes what an earlier transfer of who's left in t (a killed
// process's staging directory) and unpacks the archive from r, with every
// check UnpackSince makes, into the tree directory of a new staging
// directory, which it returns; on error nothing of it is left. Extract and
// Receive both start here.
func (t *Tree) stage(ctx context.Context, r io.Reader, who string, p Policy, lim Limits, base *Manifest) (string, *Manifest, error) {
	if _, err := t.RemoveStaging(who); err != nil {
		return "", nil, err
	}
	staging, err := t.Staging(who)
	if err != nil {
		return "", nil, err
	}
	m, err := UnpackSince(ctx, r, filepath.Join(t.dir, filepath.FromSlash(path.Join(staging, "tree"))), p, lim, base)
	if err != nil {
		_ = t.RemoveAll(staging)
		return "", nil, err
	}
	return staging, m, nil
}

// Dir is the unpacked tree on disk (for WriteContents).
func (in *Incoming) Dir() string {
	return filepath.Join(in.tree.Dir(), filepath.FromSlash(path.Join(in.staging, "tree")))
}

// Plan decides the merge of what came into the host's tree against base,
// the tree both sides last shared (see PlanMerge).
func (in *Incoming) Plan(ctx context.Context, base *Manifest, o MergeOptions) (*Plan, error) {
	if in.Manifest == nil {
		return nil, errors.New("nothing was received to merge")
	}
	return PlanMerge(ctx, in.tree, base, in.Manifest, path.Join(in.staging, "tree"), path.Join(in.staging, "scratch"), o)
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
