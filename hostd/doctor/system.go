package doctor

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/polecat-sidecar/sidecar/hostd/confine"
)

// Confinement checks that the kernel confines relayed commands (s is
// confine.Probe's answer): without it hostd serve refuses to relay, unless
// allowUnconfined (relay.allow_unconfined).
func Confinement(s confine.Support, allowUnconfined bool) Line {
	const check = "confinement"
	mend := "on Linux, a kernel with Landlock (5.13 or later, landlock among its lsm= boot parameters); on macOS, /usr/bin/sandbox-exec"
	switch {
	case s.Available():
		return ok(check, "relayed gt and bd run confined by %s", s)
	case allowUnconfined:
		return warn(check, mend, "this system cannot confine relayed commands (%s) and relay.allow_unconfined is set: a grammar mistake would let a polecat act as you", s.Reason)
	}
	return fail(check, mend+"; or, knowing what it risks, set relay.allow_unconfined",
		"this system cannot confine relayed commands (%s): hostd serve refuses to relay gt and bd", s.Reason)
}

// Disk checks the free space on the town's filesystem against the data
// channel's budget, budget bytes per polecat (sync.max_stored_bytes),
// for each polecat directory in the town (<town>/<rig>/polecats/<name>),
// at least one.
func Disk(town string, budget int64) Line {
	const check = "disk"
	dir := town
	for { // a town not made yet: the filesystem it would be on
		if _, err := os.Stat(dir); err == nil || filepath.Dir(dir) == dir {
			break
		}
		dir = filepath.Dir(dir)
	}
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return warn(check, "check the town's filesystem", "free space on %s cannot be read: %v", dir, err)
	}
	free := uint64(st.Bavail) * uint64(st.Bsize)
	n := max(polecats(town), 1)
	each := fmt.Sprintf("sync.max_stored_bytes, %s a polecat", size(uint64(budget)))
	lower := "free space on it, or lower sync.max_stored_bytes"
	switch {
	case budget > 0 && free < uint64(budget):
		return fail(check, lower, "%s free on %s's filesystem: less than one polecat's data budget (%s)", size(free), dir, each)
	case budget > 0 && free/uint64(n) < uint64(budget):
		return warn(check, lower, "%s free on %s's filesystem: less than the data budgets of its %d polecats (%s)", size(free), dir, n, each)
	}
	return ok(check, "%s free on %s's filesystem: room for the data budgets of %d polecat(s) (%s)", size(free), dir, n, each)
}

// polecats counts the polecat directories in town.
func polecats(town string) int {
	dirs, _ := filepath.Glob(filepath.Join(town, "*", "polecats", "*"))
	n := 0
	for _, d := range dirs {
		if fi, err := os.Stat(d); err == nil && fi.IsDir() && !strings.HasPrefix(filepath.Base(d), ".") {
			n++
		}
	}
	return n
}

// size is n bytes in binary units, as "1.5 GiB".
func size(n uint64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := uint64(unit), 0
	for m := n / unit; m >= unit && exp < 5; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
