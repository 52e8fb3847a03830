package pki

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"github.com/polecat-sidecar/sidecar/hostd/state"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// DefaultTokenTTL is how long a join token stays redeemable by default.
const DefaultTokenTTL = 15 * time.Minute

// token is a join token as stored: only a hash of its secret is kept.
type token struct {
	ID         string        `json:"id"`
	SecretHash string        `json:"secret_sha256"`
	Identity   wire.Identity `json:"identity"`
	Expires    time.Time     `json:"expires"`
	UsedAt     *time.Time    `json:"used_at,omitempty"`
}

// Fingerprint is the SHA-256 of the CA certificate, as join tokens carry it.
func (ca *CA) Fingerprint() []byte {
	s := sha256.Sum256(ca.Cert.Raw)
	return s[:]
}

// CreateToken mints a one-time join token bound to id, valid for ttl.
func (ca *CA) CreateToken(id wire.Identity, ttl time.Duration) (string, error) {
	if err := id.Validate(); err != nil {
		return "", err
	}
	if ttl <= 0 || ttl > 7*24*time.Hour {
		return "", fmt.Errorf("token ttl %v outside (0, 168h]", ttl)
	}
	idb, secret := make([]byte, 16), make([]byte, 16)
	_, _ = rand.Read(idb)
	_, _ = rand.Read(secret)
	enc := base64.RawURLEncoding.EncodeToString
	t := token{ID: enc(idb), SecretHash: hashSecret(enc(secret)), Identity: id, Expires: ca.now().Add(ttl)}
	err := ca.updateTokens(func(ts []token) ([]token, error) { return append(ts, t), nil })
	if err != nil {
		return "", fmt.Errorf("saving join token: %w", err)
	}
	return wire.JoinToken{ID: t.ID, Secret: enc(secret), CAFingerprint: ca.Fingerprint()}.String(), nil
}

// RedeemToken spends a join token for id: it must exist, be unused,
// unexpired, carry the right secret and be bound to id. Whatever the
// outcome, a token presented with the right secret cannot be used again.
func (ca *CA) RedeemToken(s string, id wire.Identity) error {
	jt, err := wire.ParseJoinToken(s)
	if err != nil {
		return err
	}
	if subtle.ConstantTimeCompare(jt.CAFingerprint, ca.Fingerprint()) != 1 {
		return errors.New("join token was made by another CA")
	}
	now := ca.now()
	return ca.updateTokens(func(ts []token) ([]token, error) {
		i := slices.IndexFunc(ts, func(t token) bool { return t.ID == jt.ID })
		if i < 0 || subtle.ConstantTimeCompare([]byte(ts[i].SecretHash), []byte(hashSecret(jt.Secret))) != 1 {
			return nil, errors.New("join token not recognised")
		}
		t := &ts[i]
		switch {
		case t.UsedAt != nil:
			return nil, fmt.Errorf("join token was already used at %s", t.UsedAt.Format(time.RFC3339))
		case !now.Before(t.Expires):
			return nil, fmt.Errorf("join token expired at %s", t.Expires.Format(time.RFC3339))
		case t.Identity != id:
			// Spent anyway: a token is not an oracle for names.
			t.UsedAt = &now
			return ts, fmt.Errorf("join token is for %s, not %s", t.Identity, id)
		}
		t.UsedAt = &now
		return ts, nil
	})
}

// Expected says whether id is a polecat this CA expects: it was issued a
// certificate (Issued), or holds a join token neither spent nor expired (a
// container still on its way).
func (ca *CA) Expected(id wire.Identity) (bool, error) {
	if ok, err := ca.Issued(id); ok || err != nil {
		return ok, err
	}
	var ts []token
	if err := ca.withLock(func() error { return state.Load(filepath.Join(ca.Dir, tokenFile), &ts) }); err != nil {
		return false, err
	}
	now := ca.now()
	return slices.ContainsFunc(ts, func(t token) bool { return t.Identity == id && t.UsedAt == nil && now.Before(t.Expires) }), nil
}

// updateTokens applies f under the lock. f returns the tokens to save (nil
// to save nothing) and the error to report; both may be set.
func (ca *CA) updateTokens(f func([]token) ([]token, error)) error {
	return ca.withLock(func() error {
		path := filepath.Join(ca.Dir, tokenFile)
		var ts []token
		if err := state.Load(path, &ts); err != nil {
			return err
		}
		now := ca.now()
		ts = slices.DeleteFunc(ts, func(t token) bool { return now.Sub(t.Expires) > keepExpired })
		ts, err := f(ts)
		if ts != nil {
			err = errors.Join(err, state.Save(path, ts))
		}
		return err
	})
}

func hashSecret(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}
