package pki

import (
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/polecat-sidecar/sidecar/hostd/state"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// revokedFile keeps revocations by identity: every certificate of that
// polecat from before the cut-off, recorded or not (a certificate Gas
// Town's own tools issued from the same CA has no record here).
const revokedFile = "revoked.json"

// ErrRevoked is a certificate, or its polecat, having been revoked.
var ErrRevoked = errors.New("certificate revoked")

// Revocations is what is revoked: recorded serials, and identities up to
// a cut-off. A certificate this CA recorded is revoked if its record says
// so (revoking an identity marks each of its records), so one issued here
// right after a revocation works at once despite its backdated NotBefore.
// One it did not record (Gas Town's own tools issue from the same CA) is
// revoked if its identity is and its NotBefore is at or before the
// cut-off: NotBefore is the only issue time a certificate keeps.
type Revocations struct {
	// Recorded holds every serial this CA recorded, and whether it is
	// revoked.
	Recorded map[string]bool
	// Identities holds each identity revoked by name, with its cut-off.
	Identities map[wire.Identity]time.Time
}

// Revoked says whether leaf, presented as id, is revoked.
func (r Revocations) Revoked(id wire.Identity, leaf *x509.Certificate) bool {
	if revoked, ok := r.Recorded[SerialOf(leaf)]; ok {
		return revoked
	}
	cut, ok := r.Identities[id]
	return ok && !leaf.NotBefore.After(cut)
}

// identityCut is one revocation by identity, as kept in revokedFile.
type identityCut struct {
	Identity wire.Identity `json:"identity"`
	Before   time.Time     `json:"before"`
}

// loadRevocationsLocked reads both files; the caller holds the lock.
func (ca *CA) loadRevocationsLocked() (Revocations, []Record, error) {
	var recs []Record
	var cuts []identityCut
	if err := state.Load(filepath.Join(ca.Dir, recordFile), &recs); err != nil {
		return Revocations{}, nil, err
	}
	if err := state.Load(filepath.Join(ca.Dir, revokedFile), &cuts); err != nil {
		return Revocations{}, nil, err
	}
	r := Revocations{Recorded: map[string]bool{}, Identities: map[wire.Identity]time.Time{}}
	for _, rec := range recs {
		r.Recorded[rec.Serial] = rec.RevokedAt != nil
	}
	for _, c := range cuts {
		if c.Before.After(r.Identities[c.Identity]) {
			r.Identities[c.Identity] = c.Before
		}
	}
	return r, recs, nil
}

// Revocations reads what is revoked now.
func (ca *CA) Revocations() (Revocations, error) {
	var r Revocations
	err := ca.withLock(func() (err error) {
		r, _, err = ca.loadRevocationsLocked()
		return err
	})
	return r, err
}

// RevocationStamp changes whenever a revocation is written, by this
// process or another (hostd cert revoke): the daemon compares stamps to
// notice revocations without being told.
func (ca *CA) RevocationStamp() string {
	var b strings.Builder
	for _, f := range []string{recordFile, revokedFile} {
		if st, err := os.Stat(filepath.Join(ca.Dir, f)); err == nil {
			fmt.Fprintf(&b, "%d/%d;", st.ModTime().UnixNano(), st.Size())
		}
	}
	return b.String()
}

// Revoke revokes by "rig/name" (every certificate of that polecat issued
// until now, recorded or not: an identity cut-off, and each unexpired
// record) or by serial (hex). It returns the records it revoked; revoking
// what is already revoked is not an error. It takes the CA lock that
// renewal takes, so no renewal slips between.
func (ca *CA) Revoke(target string) ([]Record, error) {
	var byID *wire.Identity
	if strings.Contains(target, "/") {
		id, err := wire.ParseIdentity(target)
		if err != nil {
			return nil, err
		}
		byID = &id
	} else {
		target = strings.ToLower(strings.TrimPrefix(strings.TrimPrefix(target, "0x"), "0X"))
		if target == "" || strings.Trim(target, "0123456789abcdef") != "" {
			return nil, fmt.Errorf("%q is neither <rig>/<name> nor a hex serial", target)
		}
		target = strings.TrimLeft(target, "0")
	}
	now := ca.now()
	var revoked []Record
	err := ca.withLock(func() error {
		path := filepath.Join(ca.Dir, recordFile)
		var recs []Record
		if err := state.Load(path, &recs); err != nil {
			return err
		}
		for i := range recs {
			r := &recs[i]
			match := (byID != nil && r.Identity == *byID && now.Before(r.NotAfter)) || (byID == nil && r.Serial == target)
			if !match {
				continue
			}
			if r.RevokedAt == nil {
				t := now
				r.RevokedAt = &t
			}
			revoked = append(revoked, *r)
		}
		if byID != nil {
			if err := ca.cutIdentityLocked(*byID, now); err != nil {
				return err
			}
		} else if len(revoked) == 0 {
			return fmt.Errorf("no certificate matches %q (see 'hostd cert list')", target)
		}
		return state.Save(path, recs)
	})
	return revoked, err
}

// cutIdentityLocked revokes every certificate of id issued up to now; the
// caller holds the lock.
func (ca *CA) cutIdentityLocked(id wire.Identity, now time.Time) error {
	path := filepath.Join(ca.Dir, revokedFile)
	var cuts []identityCut
	if err := state.Load(path, &cuts); err != nil {
		return err
	}
	kept := cuts[:0]
	for _, c := range cuts {
		if c.Identity != id {
			kept = append(kept, c)
		}
	}
	return state.Save(path, append(kept, identityCut{Identity: id, Before: now}))
}
