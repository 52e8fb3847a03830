package wire

import (
	"fmt"
	"net/url"
	"strings"
)

// DefaultTrustDomain is the SPIFFE trust domain used when none is
// configured.
const DefaultTrustDomain = "gastown.local"

// maxNameLen bounds rig and polecat names.
const maxNameLen = 64

// Identity is a polecat's identity: its rig and its name. It comes only
// from a verified certificate's URI SAN; nothing the container says about
// itself is trusted.
type Identity struct {
	Rig  string
	Name string
}

// String returns "rig/name", the form operators type.
func (id Identity) String() string {
	if id.IsZero() {
		return ""
	}
	return id.Rig + "/" + id.Name
}

// IsZero reports whether id is the empty identity.
func (id Identity) IsZero() bool { return id.Rig == "" && id.Name == "" }

// CommonName is the legacy Gas Town CN, gt-<rig>-<name>. It is written into
// certificates for compatibility and never parsed for authorization.
func (id Identity) CommonName() string { return "gt-" + id.Rig + "-" + id.Name }

// URI is the identity's SPIFFE URI in trustDomain.
func (id Identity) URI(trustDomain string) *url.URL {
	return &url.URL{Scheme: "spiffe", Host: trustDomain, Path: "/rig/" + id.Rig + "/polecat/" + id.Name}
}

// NameRule is the rule Validate applies, worded for help texts.
const NameRule = `rig and polecat names are 1 to 64 characters of A-Z, a-z, 0-9, '_' and '-',
and a polecat name does not start with '-' (Gas Town's name pools make names
such as bullet-farmer; older towns use names such as Toast)`

// Validate checks the rig against [A-Za-z0-9_-]+ and the name against
// [A-Za-z0-9_-]+ not starting with '-': Gas Town's name pools make names
// such as bullet-farmer (its rule is ^[a-z][a-z0-9-]*$), and older towns
// use names such as Toast. Both are at most 64 bytes.
func (id Identity) Validate() error {
	if err := checkName("rig", id.Rig, false); err != nil {
		return err
	}
	return checkName("polecat name", id.Name, true)
}

// checkName checks s against [A-Za-z0-9_-]{1,64}; with noLeadingDash a
// first '-' is refused too (a name that reads as a flag).
func checkName(what, s string, noLeadingDash bool) error {
	if s == "" {
		return fmt.Errorf("%s is empty", what)
	}
	if len(s) > maxNameLen {
		return fmt.Errorf("%s is %d characters long, limit %d", what, len(s), maxNameLen)
	}
	if noLeadingDash && s[0] == '-' {
		return fmt.Errorf("%s %q starts with '-'", what, s)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return fmt.Errorf("%s %q has %q at byte %d; allowed: [A-Za-z0-9_-]", what, s, c, i)
		}
	}
	return nil
}

// ParseIdentity parses "rig/name" and validates both parts.
func ParseIdentity(s string) (Identity, error) {
	rig, name, ok := strings.Cut(s, "/")
	if !ok {
		return Identity{}, fmt.Errorf("identity %q: want <rig>/<name>", s)
	}
	id := Identity{Rig: rig, Name: name}
	if err := id.Validate(); err != nil {
		return Identity{}, fmt.Errorf("identity %q: %w", s, err)
	}
	return id, nil
}

// IdentityFromURIs reads the polecat identity from a verified
// certificate's URI SANs (x509.Certificate.URIs): exactly one, of the form
// spiffe://<trustDomain>/rig/<rig>/polecat/<name>. The CN is ignored.
// (It takes the URIs, not the certificate, so that this package, which
// the gt shim links, does not pull in crypto/x509.)
func IdentityFromURIs(uris []*url.URL, trustDomain string) (Identity, error) {
	if len(uris) != 1 {
		return Identity{}, fmt.Errorf("certificate has %d URI SANs, want exactly 1 polecat identity", len(uris))
	}
	return identityFromURI(uris[0], trustDomain)
}

func identityFromURI(u *url.URL, trustDomain string) (Identity, error) {
	if u.Scheme != "spiffe" || u.Host != trustDomain || u.User != nil || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" {
		return Identity{}, fmt.Errorf("URI SAN %q is not a polecat identity in trust domain %q", u.String(), trustDomain)
	}
	parts := strings.Split(u.Path, "/")
	if len(parts) != 5 || parts[0] != "" || parts[1] != "rig" || parts[3] != "polecat" {
		return Identity{}, fmt.Errorf("URI SAN path %q: want /rig/<rig>/polecat/<name>", u.Path)
	}
	id := Identity{Rig: parts[2], Name: parts[4]}
	if err := id.Validate(); err != nil {
		return Identity{}, fmt.Errorf("URI SAN %q: %w", u.String(), err)
	}
	return id, nil
}

// MarshalText encodes the identity as "rig/name".
func (id Identity) MarshalText() ([]byte, error) { return []byte(id.String()), nil }

// UnmarshalText decodes "rig/name"; the empty string is the zero identity.
func (id *Identity) UnmarshalText(b []byte) error {
	if len(b) == 0 {
		*id = Identity{}
		return nil
	}
	p, err := ParseIdentity(string(b))
	if err != nil {
		return err
	}
	*id = p
	return nil
}
