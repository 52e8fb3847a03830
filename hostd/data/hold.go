package data

import (
	"path/filepath"
	"slices"

	"github.com/polecat-sidecar/sidecar/hostd/state"
	datasync "github.com/polecat-sidecar/sidecar/sync"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// The delete hold (sync.max_delete_share): beside each polecat's base
// (hold.json), the regular files of its data root the operator last
// confirmed (hostd sync push, or a pull with --allow-deletes), and those of
// them its transfers have since taken away. A transfer that would take that
// loss past the share is held; an agent's fetch never resets it.
// docs/security.md's delete-hold rows say why and what a fetch changes.

// hold is a polecat's delete hold state.
type hold struct {
	// Confirmed are the regular files the operator last confirmed, and
	// those fetches found the host added since.
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

// confirmed is the hold state of the operator's word: m's files
// confirmed, none lost.
func confirmed(m *datasync.Manifest) hold { return hold{Confirmed: filePaths(m)} }

// keepHold makes h the polecat's hold state.
func (s *Service) keepHold(id wire.Identity, h hold) error { return state.Save(s.holdPath(id), h) }

// fetched is h after an agent's fetch sent the host's files in sent to a
// container whose base was prev (nil when it had none): the files the
// base lacks are the host's, confirmed and no longer lost; confirmed files
// the host no longer holds and no transfer took away leave.
func (h hold) fetched(sent, prev *datasync.Manifest) hold {
	sentFiles := filePaths(sent)
	onHost, theirs := setOf(sentFiles), setOf(filePaths(prev))
	out := hold{Confirmed: []string{}}
	for _, p := range h.Lost {
		if !onHost[p] || theirs[p] {
			out.Lost = append(out.Lost, p)
		}
	}
	lost, was := setOf(out.Lost), setOf(h.Confirmed)
	for _, p := range h.Confirmed {
		if onHost[p] || lost[p] {
			out.Confirmed = append(out.Confirmed, p)
		}
	}
	for _, p := range sentFiles {
		if !theirs[p] && !was[p] {
			out.Confirmed = append(out.Confirmed, p)
		}
	}
	return out
}

// after is h with the confirmed files among lost added to what is lost.
func (h hold) after(lost []string) hold {
	confirmed, was := setOf(h.Confirmed), setOf(h.Lost)
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

// setOf is paths as a set.
func setOf(paths []string) map[string]bool {
	out := make(map[string]bool, len(paths))
	for _, p := range paths {
		out[p] = true
	}
	return out
}
