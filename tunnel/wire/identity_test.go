package wire

import (
	"crypto/x509"
	"net/url"
	"strings"
	"testing"
)

func TestParseIdentity(t *testing.T) {
	good := map[string]Identity{
		"gastown/furiosa":              {"gastown", "furiosa"},
		"my-rig_2/nova_1":              {"my-rig_2", "nova_1"},
		"A/B":                          {"A", "B"},
		"-/x":                          {"-", "x"},
		strings.Repeat("r", 64) + "/n": {strings.Repeat("r", 64), "n"},
		// Gas Town's default name pool (^[a-z][a-z0-9-]*$) and older names.
		"gastown/bullet-farmer":               {"gastown", "bullet-farmer"},
		"gastown/road-warrior":                {"gastown", "road-warrior"},
		"gastown/aqua-cola":                   {"gastown", "aqua-cola"},
		"gastown/Toast":                       {"gastown", "Toast"},
		"gastown/a-":                          {"gastown", "a-"},
		"gastown/" + strings.Repeat("n-", 32): {"gastown", strings.Repeat("n-", 32)},
	}
	for in, want := range good {
		got, err := ParseIdentity(in)
		if err != nil || got != want {
			t.Errorf("ParseIdentity(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{
		"", "/", "gastown", "gastown/", "/furiosa", "gastown/-furiosa", "gastown/-", "gastown/--x", "gastown/furiosa/x",
		"gastown/fu.riosa", "gastown/bullet farmer", "gastown/bullet\tfarmer", "gastown/b\u00fcllet",
		"gas town/x", "gastown/fu riosa", "../etc/passwd", "gastown/..", "rig\x00/x", "rig/x\n",
		"rïg/x", "rig/name;rm -rf", "rig/$(id)", strings.Repeat("r", 65) + "/n", "r/" + strings.Repeat("n", 65),
	} {
		if id, err := ParseIdentity(in); err == nil {
			t.Errorf("ParseIdentity(%q) accepted: %v", in, id)
		}
	}
}

func TestIdentityFromURIs(t *testing.T) {
	id := Identity{"gastown", "furiosa"}
	mk := func(uris ...string) *x509.Certificate {
		c := &x509.Certificate{}
		for _, s := range uris {
			u, err := url.Parse(s)
			if err != nil {
				t.Fatal(err)
			}
			c.URIs = append(c.URIs, u)
		}
		return c
	}
	if got, err := IdentityFromURIs(mk(id.URI(DefaultTrustDomain).String()).URIs, DefaultTrustDomain); err != nil || got != id {
		t.Fatalf("valid URI: %v, %v", got, err)
	}
	// Dashes in the name stay unambiguous: the path says which part is the rig.
	dashed := Identity{"my-rig", "bullet-farmer"}
	if got, err := IdentityFromURIs(mk(dashed.URI(DefaultTrustDomain).String()).URIs, DefaultTrustDomain); err != nil || got != dashed {
		t.Fatalf("dashed URI: %v, %v", got, err)
	}
	for _, uris := range [][]string{
		{},
		{"spiffe://gastown.local/rig/gastown/polecat/furiosa", "spiffe://gastown.local/rig/gastown/polecat/nux"},
		{"spiffe://other.domain/rig/gastown/polecat/furiosa"},
		{"https://gastown.local/rig/gastown/polecat/furiosa"},
		{"spiffe://gastown.local/rig/gastown/polecat/furiosa/extra"},
		{"spiffe://gastown.local/rig/gastown/crew/furiosa"},
		{"spiffe://gastown.local/rig/gastown/polecat/-furiosa"},
		{"spiffe://gastown.local/rig/gastown/polecat/"},
		{"spiffe://gastown.local/rig//polecat/furiosa"},
		{"spiffe://gastown.local/rig/gastown/polecat/furiosa?x=1"},
		{"spiffe://gastown.local/rig/gastown/polecat/furiosa#f"},
		{"spiffe://user@gastown.local/rig/gastown/polecat/furiosa"},
		{"spiffe://gastown.local/rig/gas%2Ftown/polecat/furiosa"},
		{"spiffe://gastown.local/rig/../polecat/furiosa"},
	} {
		if got, err := IdentityFromURIs(mk(uris...).URIs, DefaultTrustDomain); err == nil {
			t.Errorf("URIs %q accepted as %v", uris, got)
		}
	}
}

// FuzzIdentityFromURI: whatever a certificate's URI SAN says, the identity
// read from it is valid and maps back to the same URI.
func FuzzIdentityFromURI(f *testing.F) {
	f.Add("spiffe://gastown.local/rig/gastown/polecat/furiosa")
	f.Add("spiffe://gastown.local/rig/a/polecat/b/c")
	f.Fuzz(func(t *testing.T, s string) {
		u, err := url.Parse(s)
		if err != nil {
			return
		}
		id, err := identityFromURI(u, DefaultTrustDomain)
		if err != nil {
			return
		}
		if id.Validate() != nil {
			t.Fatalf("invalid identity %q accepted", id)
		}
		if got := id.URI(DefaultTrustDomain).String(); got != u.String() {
			t.Fatalf("identity %v from %q maps back to %q", id, u, got)
		}
	})
}
