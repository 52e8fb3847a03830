package tree

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/polecat-sidecar/sidecar/sync"
)

// Staging makes a new, empty directory for one transfer's incoming tree at
// the top of the tree, named for who is sending (a polecat's name, or
// "hostd"), and returns its name in the tree. Being inside the root, what
// is staged moves into place by a rename within it. Its name starts with
// the reserved prefix, which no policy lets cross.
func (t *Tree) Staging(who string) (string, error) {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	name := stagingPrefix + who + "." + hex.EncodeToString(b)
	if err := t.root.Mkdir(name, 0o700); err != nil {
		return "", fmt.Errorf("creating a staging directory in %s: %w", t.dir, err)
	}
	return name, nil
}

// stagingPrefix starts a staging directory's name; a '.' ends the sender's
// name in it, which polecat names lack, so nux's never matches nux-2's.
const stagingPrefix = sync.ReservedPrefix + "incoming-"

// RemoveStaging removes the staging directories who left (a transfer cut
// short by a killed process), returning how many there were.
func (t *Tree) RemoveStaging(who string) (int, error) {
	names, err := t.ReadDir(".")
	if err != nil {
		return 0, err
	}
	n := 0
	for _, name := range names {
		if strings.HasPrefix(name, stagingPrefix+who+".") {
			n++
			if err := t.RemoveAll(name); err != nil {
				return n, fmt.Errorf("removing the leftover staging directory %s: %w", name, err)
			}
		}
	}
	return n, nil
}

// RemoveStaging removes the staging directories who left in the data root
// dir (see Tree.RemoveStaging); a missing dir has none.
func RemoveStaging(dir, who string) (int, error) {
	t, err := OpenRead(dir)
	if err != nil || t == nil {
		return 0, err
	}
	defer t.Close()
	return t.RemoveStaging(who)
}
