package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/polecat-sidecar/sidecar/hostd/api"
	"github.com/polecat-sidecar/sidecar/hostd/state"
	"github.com/polecat-sidecar/sidecar/internal/logging"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// A start 'hostd run' could not make (serve down, the image missing, the
// runtime not answering, the first clone failing) is recorded, one file a
// polecat, so 'hostd status' shows it after Gas Town's pane dies. serve
// records what hostd run reports; with serve down hostd run records it.
// The next good start clears it, as does Gas Town nuking the polecat (its
// directory gone, RolledBackKeep after). docs/migrating.md: "A start that
// fails".

// Starts keeps a town's failed starts: <dir>/<rig>/<name>.json each.
type Starts struct {
	// Dir is the directory (state.Dir.StartFailures).
	Dir string
	// Town is the Gas Town root: the record of a polecat whose directory
	// Gas Town removed (it nuked the polecat) is dropped.
	Town string
	// Logger, when set (hostd serve's), hears of each failure recorded
	// and each one a start clears, at most failureLogs lines a minute per
	// polecat.
	Logger *slog.Logger

	once  sync.Once
	limit *logging.Limiter
}

// startRecord is a failed start, as its file holds it: the package's own
// type, so that a change to the control API does not change what is on
// disk. Its JSON is the file's format; a field renamed here would leave the
// records written before unread (testdata/start-failures holds one written
// by an earlier release).
type startRecord struct {
	Identity wire.Identity `json:"identity"`
	At       time.Time     `json:"at"`
	Reason   string        `json:"reason"`
}

// asAPI is r as the control API shows it (hostd status).
func (r startRecord) asAPI() api.StartFailure {
	return api.StartFailure{Identity: api.Identity(r.Identity), At: r.At, Reason: r.Reason}
}

// failureLogs is how many lines a minute Starts logs of one polecat: a
// polecat can make its clone fail as often as Gas Town starts it.
const failureLogs = 5

// File is where id's record is kept.
func (f *Starts) File(id wire.Identity) string {
	return filepath.Join(f.Dir, id.Rig, id.Name+".json")
}

// Failed records that id's start failed now, for reason (cut to
// wire.MaxReasonLen bytes of UTF-8), replacing the record before, and
// returns the record.
func (f *Starts) Failed(id wire.Identity, reason string) (api.StartFailure, error) {
	if err := id.Validate(); err != nil {
		return api.StartFailure{}, fmt.Errorf("recording a failed start: %w", err)
	}
	rec := startRecord{Identity: id, At: time.Now(), Reason: wire.TruncateReason(reason)}
	if err := os.MkdirAll(filepath.Join(f.Dir, id.Rig), 0o700); err != nil {
		return api.StartFailure{}, fmt.Errorf("recording the failed start of %s: %w", id, err)
	}
	if err := state.Save(f.File(id), rec); err != nil {
		return api.StartFailure{}, fmt.Errorf("recording the failed start of %s: %w", id, err)
	}
	f.log(slog.LevelWarn, id, "hostd run could not start a polecat; hostd status shows it until its next start", "reason", rec.Reason)
	return rec.asAPI(), nil
}

// Started removes id's record: a start succeeded; cleared says whether
// there was one.
func (f *Starts) Started(id wire.Identity) (cleared bool, err error) {
	if err := id.Validate(); err != nil {
		return false, fmt.Errorf("clearing a failed start: %w", err)
	}
	err = os.Remove(f.File(id))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("clearing the failed start of %s: %w", id, err)
	}
	f.log(slog.LevelInfo, id, "hostd run started a polecat that had failed to start")
	return true, nil
}

// Failure is id's record; ok is false when there is none, or its polecat is
// gone.
func (f *Starts) Failure(id wire.Identity) (rec api.StartFailure, ok bool) {
	if id.Validate() != nil || !f.current(id) {
		return api.StartFailure{}, false
	}
	return f.load(id)
}

// Failures is every record, by identity. A polecat Gas Town has nuked loses
// its record here.
func (f *Starts) Failures() []api.StartFailure {
	rigs, _ := os.ReadDir(f.Dir)
	var list []api.StartFailure
	for _, rig := range rigs {
		names, _ := os.ReadDir(filepath.Join(f.Dir, rig.Name()))
		for _, n := range names {
			name, ok := strings.CutSuffix(n.Name(), ".json")
			id := wire.Identity{Rig: rig.Name(), Name: name}
			if !ok || id.Validate() != nil || !f.current(id) {
				continue
			}
			if rec, ok := f.load(id); ok {
				list = append(list, rec)
			}
		}
	}
	slices.SortFunc(list, func(a, b api.StartFailure) int { return strings.Compare(a.Identity.String(), b.Identity.String()) })
	return list
}

// LogFailures logs every record, for hostd serve's start: those hostd
// run left while serve was down among them.
func (f *Starts) LogFailures() {
	for _, rec := range f.Failures() {
		f.log(slog.LevelWarn, wire.Identity(rec.Identity), "a polecat failed to start before hostd serve started; hostd status shows it until its next start",
			"at", rec.At, "reason", rec.Reason)
	}
}

// RolledBackKeep is how long a failed start stays shown after Gas Town
// removed its polecat's directory: gt sling rolls back a polecat whose
// session failed to start, at once, and the reason must outlive that.
const RolledBackKeep = 15 * time.Minute

// current says whether id's record still counts: its polecat is there,
// or its directory went less than RolledBackKeep after the failure. A
// record older than that of a polecat Gas Town removed (nuked) goes.
func (f *Starts) current(id wire.Identity) bool {
	if home, err := Home(f.Town, id); err != nil || home != "" {
		return true
	}
	if st, err := os.Stat(f.File(id)); err == nil && time.Since(st.ModTime()) < RolledBackKeep {
		return true
	}
	_ = os.Remove(f.File(id))
	return false
}

// load reads id's record through os.Root, so that no name leaves the
// directory. One that cannot be read is shown as a failure saying so:
// status must still show that the polecat failed.
func (f *Starts) load(id wire.Identity) (api.StartFailure, bool) {
	root, err := os.OpenRoot(f.Dir)
	if err != nil {
		return api.StartFailure{}, false
	}
	defer root.Close()
	b, err := root.ReadFile(filepath.Join(id.Rig, id.Name+".json"))
	if errors.Is(err, fs.ErrNotExist) {
		return api.StartFailure{}, false
	}
	var rec startRecord
	if err == nil {
		err = json.Unmarshal(b, &rec)
	}
	if err != nil {
		rec = startRecord{Reason: fmt.Sprintf("the record of its failed start is unreadable (%v): remove %s", err, f.File(id))}
	}
	rec.Identity, rec.Reason = id, wire.TruncateReason(rec.Reason)
	return rec.asAPI(), true
}

// log writes one line of id's, within failureLogs a minute.
func (f *Starts) log(level slog.Level, id wire.Identity, msg string, attrs ...any) {
	if f.Logger == nil {
		return
	}
	f.once.Do(func() { f.limit = logging.NewLimiter(failureLogs, time.Minute) })
	if ok, held := f.limit.Allow(id.String()); ok {
		f.Logger.Log(context.Background(), level, msg, append([]any{"polecat", id, "lines_not_logged", held}, attrs...)...)
	}
}
