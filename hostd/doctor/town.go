package doctor

import (
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/polecat-sidecar/sidecar/hostd/pki"
)

// caSoon is how long before its end a CA is worth a warning: every
// container trusts it, so a new one is a change to plan.
const caSoon = 30 * 24 * time.Hour

// Town checks that town is a directory, and Gas Town's (its
// mayor/town.json, which gt install writes).
func Town(town string) Line {
	fi, err := os.Stat(town)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fail("town", "name the town with --town, HOSTD_TOWN or GT_TOWN (Gas Town's default is ~/gt), or make it with 'gt install'",
			"no town at %s", town)
	case err != nil:
		return fail("town", "make it readable by this user", "reading the town %s: %v", town, err)
	case !fi.IsDir():
		return fail("town", "name the town's root directory with --town", "%s is not a directory", town)
	}
	if _, err := os.Stat(filepath.Join(town, "mayor", "town.json")); err != nil {
		return warn("town", "'gt install "+town+"' makes a Gas Town there; hostd serves a directory without one all the same",
			"%s has no mayor/town.json: not a town Gas Town made", town)
	}
	return ok("town", "%s", town)
}

// CA checks the town's CA (<town>/.runtime/ca): there, readable, its key
// private and matching, and not near its end at now.
func CA(town, trustDomain string, now time.Time) Line {
	dir := pki.Dir(town)
	ca, err := pki.Open(dir, trustDomain)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fail("ca", "'hostd ca init' (it adopts gt-proxy-server's CA when there is one, else makes one)", "no CA at %s", dir)
	case err != nil:
		return fail("ca", "mend what the message names; 'hostd ca init' makes a CA only where there is none", "%v", err)
	}
	end := ca.Cert.NotAfter
	renew := fmt.Sprintf("move %s away and run 'hostd ca init --new', then give every container the new ca.crt (join tokens carry its hash)", dir)
	switch left := end.Sub(now); {
	case left <= 0:
		return fail("ca", renew, "the CA at %s expired on %s", dir, end.Format(time.DateOnly))
	case left < caSoon:
		return warn("ca", renew, "the CA at %s expires on %s, in %d days", dir, end.Format(time.DateOnly), int(left.Hours()/24))
	}
	return ok("ca", "%s: %q until %s (sha256 %s...)", dir, ca.Cert.Subject.CommonName, end.Format(time.DateOnly), hex.EncodeToString(ca.Fingerprint())[:16])
}

// ProxyCA checks gt-proxy-server's CA, in proxyDir (pki.ProxyCADir),
// against the town's: containers set up for gt-proxy-server trust the
// one there, so the town's must be it.
func ProxyCA(proxyDir, town string) Line {
	const check = "gt-proxy-server-ca"
	townDir := pki.Dir(town)
	if filepath.Clean(proxyDir) == filepath.Clean(townDir) {
		return ok(check, "gt-proxy-server keeps its CA in the town's CA directory, %s", townDir)
	}
	theirs, err := readCert(proxyDir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return ok(check, "none at %s (gt-proxy-server has not run here; for a CA kept elsewhere: hostd ca init --from DIR)", proxyDir)
	case err != nil:
		return warn(check, "mend or move it away; the town's CA does not depend on it", "gt-proxy-server's CA at %s: %v", proxyDir, err)
	}
	ours, err := readCert(townDir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return warn(check, "'hostd ca init' adopts it: the certificates it issued, and the containers trusting it, stay valid",
			"gt-proxy-server's CA is at %s and the town has none", proxyDir)
	case err != nil:
		return ok(check, "gt-proxy-server's CA is at %s (the town's cannot be read to compare: see ca)", proxyDir)
	case !ours.Equal(theirs):
		return warn(check, fmt.Sprintf("give those containers the town's %s; or, to keep them as they are, move %s away and run 'hostd ca init --from %s'",
			filepath.Join(townDir, pki.CertFile), townDir, proxyDir),
			"gt-proxy-server's CA at %s is not the town's: containers that trust it (GT_PROXY_CA) will not trust hostd", proxyDir)
	}
	return ok(check, "gt-proxy-server's CA at %s is the town's: the certificates it issued stay valid", proxyDir)
}

// readCert reads the certificate ca.crt in dir.
func readCert(dir string) (*x509.Certificate, error) {
	b, err := os.ReadFile(filepath.Join(dir, pki.CertFile))
	if err != nil {
		return nil, err
	}
	return pki.ParseCertPEM(b)
}

// Clock checks now against what the town's CA knows of time: its own
// start and the newest certificate it issued, each of which was now once.
// Offline there is no time server to ask, so a clock ahead, or behind
// by less than that, passes.
func Clock(town, trustDomain string, now time.Time) Line {
	setClock := "set the clock (NTP: 'timedatectl set-ntp true' on Linux; on macOS, Date & Time's 'Set time automatically')"
	shown := now.Format(time.RFC3339)
	ca, err := pki.Open(pki.Dir(town), trustDomain)
	if err != nil {
		return ok("clock", "%s; no CA to compare it with (doctor asks no time server)", shown)
	}
	if now.Before(ca.Cert.NotBefore) {
		return fail("clock", setClock, "%s is before the CA's start, %s: the clock is behind", shown, ca.Cert.NotBefore.Format(time.RFC3339))
	}
	recs, err := ca.Records()
	if err != nil {
		return warn("clock", "mend the CA's records (see the message)", "%s; the CA's records cannot be read: %v", shown, err)
	}
	var newest pki.Record
	for _, r := range recs {
		if r.NotBefore.After(newest.NotBefore) {
			newest = r
		}
	}
	if newest.Serial == "" {
		return ok("clock", "%s: after the CA's start (it has issued nothing yet; doctor asks no time server)", shown)
	}
	if now.Before(newest.NotBefore) {
		return fail("clock", setClock, "%s is before the certificate the CA issued %s at %s: the clock is behind",
			shown, newest.Identity, newest.NotBefore.Format(time.RFC3339))
	}
	return ok("clock", "%s: after the newest certificate the CA issued (%s; doctor asks no time server, keep NTP on)", shown, newest.NotBefore.Format(time.RFC3339))
}
