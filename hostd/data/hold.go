package data

import (
	"path/filepath"
	"slices"

	"github.com/polecat-sidecar/sidecar/hostd/state"
	datasync "github.com/polecat-sidecar/sidecar/sync"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// The delete hold (sync.max_delete_share). hostd keeps, beside each
// polecat's base (hold.json), the regular files of its data root it last
// confirmed: what it pushed into the container (the host's own data), or
// what a pull the operator confirmed with --allow-deletes left; and which
// of them the polecat's transfers have since taken away (deleted, emptied
// or made something else). A transfer that would take that loss past the
// share of the confirmed files is held. The loss adds up over transfers,
// so many small ones cannot get round it, and files the polecat added
// itself, or the operator deleted on the host, do not count.

// hold is a polecat's delete hold state.
type hold struct {
	// Confirmed are the regular files hostd last confirmed.
	Confirmed []string `json:"confirmed"`
	// Lost are those of them the polecat's transfers took away since.
	Lost []string `json:"lost,omitempty"`
}

func (s *Service) holdPath(id wire.Identity) string { return filepath.Join(s.baseDir(id), "hold.json") }

// loadHold is the polecat's hold state; without one (none was kept yet)
// the files of its base are the confirmed ones.
func (s *Service) loadHold(id wire.Identity, base *datasync.Manifest) hold {
	var h hold
	if err := state.Load(s.holdPath(id), &h); err == nil && h.Confirmed != nil {
		return h
	}
	return hold{Confirmed: filePaths(base)}
}

// confirm makes m's files the confirmed ones, none lost.
func (s *Service) confirm(id wire.Identity, m *datasync.Manifest) error {
	return state.Save(s.holdPath(id), hold{Confirmed: filePaths(m)})
}

// after is h with the confirmed files among lost added to what is lost.
func (h hold) after(lost []string) hold {
	confirmed := make(map[string]bool, len(h.Confirmed))
	for _, p := range h.Confirmed {
		confirmed[p] = true
	}
	was := make(map[string]bool, len(h.Lost))
	for _, p := range h.Lost {
		was[p] = true
	}
	out := hold{Confirmed: h.Confirmed, Lost: slices.Clone(h.Lost)}
	for _, p := range lost {
		if confirmed[p] && !was[p] {
			out.Lost = append(out.Lost, p)
			was[p] = true
		}
	}
	return out
}

// over says whether a transfer that takes h to next is held at share:
// it adds to the loss, and the loss passes share of the confirmed files.
func (h hold) over(next hold, share float64) bool {
	return share < 1 && len(next.Lost) > len(h.Lost) && float64(len(next.Lost)) > share*float64(len(h.Confirmed))
}

// filePaths lists m's regular files (none for a nil manifest).
func filePaths(m *datasync.Manifest) []string {
	if m == nil {
		return []string{}
	}
	out := []string{}
	for _, e := range m.Entries {
		if e.Type == datasync.TypeFile {
			out = append(out, e.Path)
		}
	}
	return out
}
