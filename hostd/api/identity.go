package api

import (
	"fmt"
	"strings"
)

// Identity is a polecat's identity as the API shows it: its rig and name,
// "rig/name" in JSON, as tunnel/wire's Identity is encoded. The daemon
// converts wire's to it (Identity(id)) and checks every identity it is
// given; the CLI converts it back to act on it.
type Identity struct {
	Rig  string
	Name string
}

// String returns "rig/name", the form operators type; "" when zero.
func (id Identity) String() string {
	if id.Rig == "" && id.Name == "" {
		return ""
	}
	return id.Rig + "/" + id.Name
}

// MarshalText encodes the identity as "rig/name".
func (id Identity) MarshalText() ([]byte, error) { return []byte(id.String()), nil }

// UnmarshalText decodes "rig/name"; the empty string is the zero
// identity. The names are the daemon's, which validated them.
func (id *Identity) UnmarshalText(b []byte) error {
	if len(b) == 0 {
		*id = Identity{}
		return nil
	}
	rig, name, ok := strings.Cut(string(b), "/")
	if !ok || rig == "" || name == "" {
		return fmt.Errorf("decoding identity %q: want <rig>/<name>", b)
	}
	*id = Identity{Rig: rig, Name: name}
	return nil
}
