package data

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	datasync "github.com/polecat-sidecar/sidecar/sync"
	"github.com/polecat-sidecar/sidecar/sync/archive"

	"github.com/polecat-sidecar/sidecar/internal/atomicfile"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// received is what the agent keeps of the last push.
type received struct {
	Include []string `json:"include"`
	Exclude []string `json:"exclude,omitempty"`
	// RootID is the id written into the data root's marker when the push
	// was installed there.
	RootID string    `json:"root_id,omitempty"`
	At     time.Time `json:"at"`
}

func (s *Service) statePath() string { return filepath.Join(s.cfg.StateDir, "sync.json") }

func (s *Service) lastPath() string { return filepath.Join(s.cfg.StateDir, "sync-last.json") }

// exchanged remembers m as the tree both sides now have.
func (s *Service) exchanged(m *datasync.Manifest) {
	s.last = m.Resolved()
	b, _ := s.last.AppendJSON(nil)
	if err := atomicfile.Write(s.lastPath(), b, 0o600); err != nil {
		s.cfg.Logger.Warn("sync: could not remember what was exchanged; the next transfer sends everything", "err", err)
	}
}

// loadLast reads what the previous agent exchanged last; when it cannot,
// it says so, and the next transfer sends everything.
func (s *Service) loadLast() {
	b, err := os.ReadFile(s.lastPath())
	if err == nil {
		s.last, err = datasync.DecodeManifest(b)
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		s.last = nil
		s.cfg.Logger.Warn("sync: what was exchanged last cannot be read; the next transfer sends everything", "path", s.lastPath(), "err", err)
	}
}

func (s *Service) loadReceived() (r received, ok bool) {
	b, err := os.ReadFile(s.statePath())
	return r, err == nil && json.Unmarshal(b, &r) == nil
}

// bind marks the data root as the one the data hostd sent under p went
// into, and keeps p and the mark's id beside the base.
func (s *Service) bind(p datasync.Policy) {
	s.policy, s.rootID = &p, rand.Text()
	if err := atomicfile.Write(filepath.Join(s.cfg.Root, datasync.RootMarkerName), []byte(s.rootID+"\n"), 0o600); err != nil {
		s.cfg.Logger.Warn("sync: could not mark the data root as the one the data went into; the agent sends none of it and asks hostd again at the next checkpoint", "err", err)
		s.rootID = ""
	}
	b, _ := json.Marshal(received{Include: p.Include, Exclude: p.Exclude, RootID: s.rootID, At: time.Now()})
	if err := atomicfile.Write(s.statePath(), b, 0o600); err != nil {
		s.cfg.Logger.Warn("sync: could not remember the data policy; a restarted agent will ask again", "err", err)
	}
}

// adoptLegacy binds the data root to a base kept by a gt-agent from
// before roots were marked (a policy and a base, no root id) when the root
// holds at least half of the base's files (same path and size; an image's
// own CLAUDE.md is not enough): it is the root that agent installed into,
// with the polecat's latest edits, which a fetch would overwrite. Any
// other root (a new container on a kept state directory) is fetched into.
func (s *Service) adoptLegacy() {
	if s.policy == nil || s.rootID != "" || s.last == nil {
		return
	}
	want, _ := s.last.Files()
	if want == 0 || 2*heldOf(s.cfg.Root, s.last) < want {
		return
	}
	s.bind(*s.policy)
	s.cfg.Logger.Info("sync: marked the data root an earlier gt-agent installed into as the one its base describes", "root", s.cfg.Root)
}

// heldOf counts the files of base that root holds as regular files of the
// size base gives.
func heldOf(root string, base *datasync.Manifest) int {
	r, err := os.OpenRoot(root)
	if err != nil {
		return 0
	}
	defer r.Close()
	n := 0
	for _, e := range base.Entries {
		if e.Type != datasync.TypeFile {
			continue
		}
		if fi, err := r.Lstat(e.Path); err == nil && fi.Mode().IsRegular() && fi.Size() == e.Size {
			n++
		}
	}
	return n
}

// noDataError says why this container counts as having none of the
// polecat's data: whatever its root holds would read as deletions.
type noDataError struct{ root, why string }

func (e *noDataError) Error() string {
	return wire.SyncNoData + " (its data root " + e.root + " " + e.why + "); nothing sent"
}

// noData says why the data root cannot be sent from under p (nil when it
// can); the caller holds the turn.
func (s *Service) noData(p *datasync.Policy) error {
	if p == nil || s.rootID == "" {
		return &noDataError{s.cfg.Root, "has had nothing installed from hostd"}
	}
	return checkRoot(s.cfg.Root, s.rootID, *p, s.last)
}

// checkRoot says why root is not the tree base was taken from (nil when it
// is): it is missing, its marker is absent or holds another id than id, or
// it holds none of the files p lets cross while base has some.
func checkRoot(root, id string, p datasync.Policy, base *datasync.Manifest) error {
	const notIt = ", so it is not the one the base was taken from"
	r, err := os.OpenRoot(root)
	if errors.Is(err, fs.ErrNotExist) {
		return &noDataError{root, "does not exist"}
	}
	if err != nil {
		return &noDataError{root, "cannot be opened: " + err.Error()}
	}
	defer r.Close()
	mark, err := readMarker(r)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return &noDataError{root, "has no " + datasync.RootMarkerName + notIt}
	case err != nil:
		return &noDataError{root, "has a " + datasync.RootMarkerName + " that cannot be read (" + err.Error() + ")" + notIt}
	case mark != id:
		return &noDataError{root, "has another root's " + datasync.RootMarkerName + notIt}
	}
	if base == nil {
		return nil
	}
	if want, _ := base.Files(); want > 0 {
		files, _, err := archive.Size(root, p)
		if err != nil {
			return &noDataError{root, "cannot be read: " + err.Error()}
		}
		if files == 0 {
			return &noDataError{root, fmt.Sprintf("holds none of the %d whitelisted files the base has", want)}
		}
	}
	return nil
}

// readMarker reads the id in the root's marker: a short line.
func readMarker(r *os.Root) (string, error) {
	f, err := r.Open(datasync.RootMarkerName)
	if err != nil {
		return "", err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 128))
	return strings.TrimSpace(string(b)), err
}
