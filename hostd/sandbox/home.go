package sandbox

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// HomeLabel is the label holding Home of the polecat's directory a
// sandbox was made for.
const HomeLabel = "polecat-sidecar.home"

// Home identifies one life of polecat id's directory in town,
// <town>/<rig>/polecats/<name>: Gas Town makes it when it makes the
// polecat and removes it when it nukes it, and gives the name to the
// next polecat it makes, whose directory has another Home. It is the
// directory's inode and birth time ("" when the directory is missing;
// the inode alone where the filesystem keeps no birth time, and an
// inode is soon reused).
func Home(town string, id wire.Identity) (string, error) {
	path := filepath.Join(town, id.Rig, "polecats", id.Name)
	fi, err := os.Lstat(path)
	if os.IsNotExist(err) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("reading the polecat's directory: %w", err)
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("%s is not a directory", path)
	}
	return birth(path)
}

// SameHome says whether a sandbox labelled label was made for the
// directory whose Home is now: a sandbox made before the label existed
// (label "") counts as the same.
func SameHome(label, now string) bool { return label == "" || label == now }
