package merge

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path"
	"path/filepath"
	"strconv"
	"time"

	"github.com/polecat-sidecar/sidecar/sync"
	"github.com/polecat-sidecar/sidecar/sync/archive"
)

// maxMergeInput bounds what one merge's text merges read, all told: past
// it, files changed on both sides conflict rather than merge, so a merge's
// CPU is bounded whatever git merge-file makes of its input.
const maxMergeInput = 64 << 20

// staged is a merged file written to the scratch directory.
type staged struct {
	path string
	size int64
}

// textMerge tries a three-way merge of a text file changed on both sides
// (git merge-file semantics), writing the result to the scratch
// directory; ok is false when it is not text, too big, missing on a side,
// the base's content is not kept, or the hunks conflict. git reads only
// copies the merge made in scratch, never a path in the host's tree.
func (pl *planner) textMerge(rel string, base, cur, theirs *sync.Entry) (staged, bool, error) {
	max := pl.o.MaxTextMerge
	if base == nil || base.Type != sync.TypeFile || base.Size > max || cur.Size > max || theirs.Size > max || pl.o.Base == nil ||
		pl.mergeIn+base.Size+cur.Size+theirs.Size > maxMergeInput {
		return staged{}, false, nil
	}
	pl.mergeIn += base.Size + cur.Size + theirs.Size
	baseContent, ok := archive.Kept(pl.o.Base, base)
	if !ok {
		return staged{}, false, nil // not kept, or not intact
	}
	pl.merges++
	n := strconv.Itoa(pl.merges)
	hostCopy, basePath, out := path.Join(pl.scratch, n+".host"), path.Join(pl.scratch, n+".base"), path.Join(pl.scratch, n+".merged")
	if err := pl.copyHost(rel, hostCopy); err != nil {
		return staged{}, false, err
	}
	if err := pl.t.WriteFile(basePath, baseContent, 0o600); err != nil {
		return staged{}, false, err
	}
	abs := func(rel string) string { return filepath.Join(pl.t.Dir(), filepath.FromSlash(rel)) }
	theirsPath := pl.tree.at(rel)
	for _, p := range []string{basePath, hostCopy, theirsPath} {
		if !pl.isText(p) {
			return staged{}, false, nil
		}
	}
	if pl.o.Gate != nil {
		release, err := pl.o.Gate()
		if err != nil {
			return staged{}, false, err
		}
		defer release()
	}
	cmd := exec.CommandContext(pl.ctx, "git", "merge-file", "-p", "-L", "host", "-L", "base", "-L", "container", abs(hostCopy), abs(basePath), abs(theirsPath))
	var merged bytes.Buffer
	cmd.Stdout = &merged
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee) && ee.ExitCode() > 0 && ee.ExitCode() < 128:
		return staged{}, false, nil // conflicting hunks
	default:
		return staged{}, false, fmt.Errorf("git merge-file: %w", err)
	}
	if err := pl.t.WriteFile(out, merged.Bytes(), 0o600); err != nil {
		return staged{}, false, err
	}
	if err := pl.t.SetMeta(out, cur.Mode, time.Time{}); err != nil {
		return staged{}, false, err
	}
	return staged{path: out, size: int64(merged.Len())}, true, nil
}

// copyHost copies the host's file at rel to scratch.
func (pl *planner) copyHost(rel, to string) error {
	in, err := pl.t.Open(rel)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := pl.t.Create(to, 0o600)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	return errors.Join(err, out.Close())
}

// isText says whether a file in t looks like text: no NUL in its first
// 8 KiB.
func (pl *planner) isText(rel string) bool {
	f, err := pl.t.Open(rel)
	if err != nil {
		return false
	}
	defer f.Close()
	buf := make([]byte, 8<<10)
	n, _ := io.ReadFull(f, buf)
	return !bytes.Contains(buf[:n], []byte{0})
}
