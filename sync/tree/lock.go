package tree

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"time"
)

// Lock takes an exclusive lock on the tree's directory itself (flock on
// its descriptor: no file is made), held until unlock, so that merges
// into one root (a root shared by a rig's polecats) are done one at a
// time: each sees what the other wrote as a change on the host. It waits
// for another merge as long as ctx lets it.
func (t *Tree) Lock(ctx context.Context) (unlock func(), err error) {
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
