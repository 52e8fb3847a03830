package pki

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"github.com/polecat-sidecar/sidecar/hostd/state"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// How a certificate came to be issued.
const (
	SourceIssue = "issue" // hostd cert issue
	SourceJoin  = "join"  // redeemed join token
	SourceRenew = "renew" // renewed over the tunnel
)

// Record is what hostd remembers of an issued certificate.
type Record struct {
	Serial    string        `json:"serial"`
	Identity  wire.Identity `json:"identity"`
	NotBefore time.Time     `json:"not_before"`
	NotAfter  time.Time     `json:"not_after"`
	Source    string        `json:"source"`
	RevokedAt *time.Time    `json:"revoked_at,omitempty"`
}

// Status is a record's state at t: revoked, expired, expiring (within a
// quarter of its lifetime or an hour, whichever is less) or valid.
func (r Record) Status(t time.Time) string {
	switch {
	case r.RevokedAt != nil:
		return "revoked"
	case !t.Before(r.NotAfter):
		return "expired"
	case r.NotAfter.Sub(t) < min(r.NotAfter.Sub(r.NotBefore)/4, time.Hour):
		return "expiring"
	default:
		return "valid"
	}
}

// keepExpired is how long expired records stay listed before pruning.
const keepExpired = 7 * 24 * time.Hour

// withLock runs f holding an exclusive lock on the CA directory, so that
// the CLI and the daemon can both update the records safely.
func (ca *CA) withLock(f func() error) error {
	lf, err := os.OpenFile(filepath.Join(ca.Dir, lockFile), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("opening CA lock: %w", err)
	}
	defer lf.Close()
	if err := syscall.Flock(int(lf.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("locking CA directory: %w", err)
	}
	defer syscall.Flock(int(lf.Fd()), syscall.LOCK_UN)
	return f()
}

// recordLocked remembers an issued certificate beside recs (the records
// as loaded under the lock the caller holds), and its identity for good:
// records are pruned a week after expiry, names never are (branch
// ownership depends on every name a rig ever had).
func (ca *CA) recordLocked(recs []Record, r Record) error {
	now := ca.now()
	if err := ca.rememberName(r.Identity); err != nil {
		return err
	}
	recs = slices.DeleteFunc(recs, func(x Record) bool { return now.Sub(x.NotAfter) > keepExpired })
	return state.Save(filepath.Join(ca.Dir, recordFile), append(recs, r))
}

// rememberName adds id to the names ever issued; the caller holds the lock.
func (ca *CA) rememberName(id wire.Identity) error {
	path := filepath.Join(ca.Dir, namesFile)
	var names []wire.Identity
	if err := state.Load(path, &names); err != nil {
		return err
	}
	if slices.Contains(names, id) {
		return nil
	}
	return state.Save(path, append(names, id))
}

// KnownNames lists every polecat name of rig this CA ever issued a
// certificate to (the remembered names, and the records, which older
// versions kept alone).
func (ca *CA) KnownNames(rig string) ([]string, error) {
	var names []wire.Identity
	var recs []Record
	err := ca.withLock(func() error {
		if err := state.Load(filepath.Join(ca.Dir, namesFile), &names); err != nil {
			return err
		}
		return state.Load(filepath.Join(ca.Dir, recordFile), &recs)
	})
	if err != nil {
		return nil, err
	}
	for _, r := range recs {
		names = append(names, r.Identity)
	}
	var out []string
	for _, id := range names {
		if id.Rig == rig && !slices.Contains(out, id.Name) {
			out = append(out, id.Name)
		}
	}
	return out, nil
}

// Issued says whether this CA ever issued id a certificate (KnownNames).
// A certificate Gas Town's own tools issued from the same CA is not
// recorded here, so false does not prove that none exists.
func (ca *CA) Issued(id wire.Identity) (bool, error) {
	names, err := ca.KnownNames(id.Rig)
	return slices.Contains(names, id.Name), err
}

// Records lists every remembered certificate, oldest first.
func (ca *CA) Records() ([]Record, error) {
	var recs []Record
	err := ca.withLock(func() error { return state.Load(filepath.Join(ca.Dir, recordFile), &recs) })
	return recs, err
}
