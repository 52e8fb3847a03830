package data

import (
	"slices"
	"strings"

	"github.com/polecat-sidecar/sidecar/hostd/api"
)

// Status is the data policy, the storage budget and each connected
// polecat's host root: where it is, its rig's root, what hostd stores for
// it and the links in it that lead out.
func (s *Service) Status() api.SyncStatus {
	st := api.SyncStatus{Include: s.policy.Include, Exclude: s.policy.Exclude, RigInclude: s.rigPolicy.Include, MaxStoredBytes: s.cfg.MaxStoredBytes}
	for id := range s.reg.Snapshot() {
		r := api.SyncRoot{Polecat: api.Identity(id), Host: s.Root(id), Rig: s.RigRoot(id)}
		r.StoredBytes, _ = s.Stored(id)
		r.EscapingLinks, _ = s.EscapingLinks(id)
		st.Roots = append(st.Roots, r)
	}
	slices.SortFunc(st.Roots, func(a, b api.SyncRoot) int { return strings.Compare(a.Polecat.String(), b.Polecat.String()) })
	return st
}
