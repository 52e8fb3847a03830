package merge

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path"
	"unicode/utf8"
)

// conflictName is where the container's version of rel goes when it
// cannot take rel's place: rel.conflict-<polecat>-<time>, with -2, -3, ...
// after it when that name is taken (on the host, by this merge or by this
// transfer), so a copy never replaces anything; a name too long for the
// filesystem is shortened, with a hash of what was cut. The same rel
// always gets the same name within one merge.
func (pl *planner) conflictName(rel string) string {
	if name, ok := pl.copies[rel]; ok {
		return name
	}
	suffix := "." + conflictInfix + pl.o.Polecat + "-" + pl.o.Now.UTC().Format("20060102T150405Z")
	dir, name := path.Split(rel)
	if room := nameMax - len(suffix) - len("-ffffffffffffffff"); len(name) > room {
		sum := sha256.Sum256([]byte(name))
		keep := max(room-9, 0)
		for keep > 0 && !utf8.RuneStart(name[keep]) {
			keep--
		}
		name = name[:keep] + "-" + hex.EncodeToString(sum[:4])
	}
	first := dir + name + suffix
	copyName := first
	for i := 2; pl.taken(copyName); i++ {
		if i > maxCopyTries { // the names are someone's doing: a random one, which nobody can have taken
			b := make([]byte, 8)
			_, _ = rand.Read(b)
			copyName = first + "-" + hex.EncodeToString(b)
			break
		}
		copyName = fmt.Sprintf("%s-%d", first, i)
	}
	pl.copies[rel] = copyName
	return copyName
}

// nameMax is the longest name of one path element the filesystems hostd
// runs on take; a copy's name keeps room for a 16-hex-digit suffix.
const nameMax = 255

// maxCopyTries is how many numbered names a conflict copy tries before it
// takes a random suffix.
const maxCopyTries = 20

// conflictInfix marks a conflict copy's name: rel.conflict-...
const conflictInfix = "conflict-"

// taken says whether the merge may not put a new entry at name: the host
// has something there, or the merge already placed something there.
func (pl *planner) taken(name string) bool {
	if _, ok := pl.final[name]; ok || pl.theirs[name] != nil || pl.base[name] != nil {
		return true
	}
	for _, c := range pl.copies {
		if c == name {
			return true
		}
	}
	_, err := pl.t.Lstat(name)
	return err == nil
}
