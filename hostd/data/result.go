package data

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/polecat-sidecar/sidecar/hostd/api"
	"github.com/polecat-sidecar/sidecar/hostd/limits"
	"github.com/polecat-sidecar/sidecar/sync/merge"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// agentRefusal is a pull the agent refused (its reason is its own).
type agentRefusal struct {
	id wire.Identity
	re *wire.RemoteError
}

func (e *agentRefusal) Error() string {
	return fmt.Sprintf("the agent of %s refused the pull: %s", e.id, e.re.Reason)
}
func (e *agentRefusal) Unwrap() error { return e.re }

// maxConflictLines is how many conflicts one transfer logs one by one;
// the rest are counted in one line.
const maxConflictLines = 10

// logConflicts logs a merge's conflicts, at most maxConflictLines of them.
func (s *Service) logConflicts(id wire.Identity, changes []merge.Change) {
	n := 0
	for _, c := range changes {
		if c.Action != merge.Conflicted {
			continue
		}
		if n++; n <= maxConflictLines {
			s.log.Warn("sync: conflict; the host's version stays, the container's is beside it", "polecat", id, "path", c.Path, "copy", c.Copy)
		}
	}
	if n > maxConflictLines {
		limits.Hit(limits.SyncLog)
		s.log.Warn("sync: more conflicts in this transfer than are logged one by one; hostd sync log and the pull's result list them", "polecat", id,
			"conflicts", n, "logged", maxConflictLines)
	}
}

// maxSkippedShown is how many of the paths a container left out a result
// names: each at most 4 KiB, 24 KiB escaped in JSON, so ten fit beside
// the changes (half the result) with room to spare.
const maxSkippedShown = 10

// maxResultBytes is what summarise lets a result's changes take: half
// what a SyncResult may be, so the rest always fits.
const maxResultBytes = wire.MaxSyncResult / 2

// summarise is as many changes as fit a SyncResult, and how many more
// there were: a merge that changed more than the wire can carry still
// says it succeeded.
func summarise(changes []merge.Change) (out []wire.SyncChange, more int) {
	size := 0
	for i, c := range changes {
		b, _ := json.Marshal(wire.SyncChange(c)) // escaped as it goes out: a path of control characters grows six-fold
		if size += len(b) + 1; size > maxResultBytes {
			return out, len(changes) - i
		}
		out = append(out, wire.SyncChange(c))
	}
	return out, 0
}

func fail(err error) (wire.SyncResult, error) { return wire.SyncResult{Error: err.Error()}, err }

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// progressReader tells progress how many bytes of the archive have come.
type progressReader struct {
	r        io.Reader
	n        int64
	progress func(api.SyncProgress)
}

func (p *progressReader) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	p.n += int64(n)
	p.progress(api.SyncProgress{Bytes: p.n})
	return n, err
}
