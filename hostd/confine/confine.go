// Package confine starts a process that, with every process it starts in
// turn, can touch only the paths a Policy grants: the kernel refuses the
// rest, whatever the process was talked into. On Linux it is Landlock,
// applied to one locked thread of hostd that then starts the process
// (hostd itself stays unconfined); on macOS it is sandbox-exec with a
// profile made from the Policy. hostd confines every process it runs for
// a polecat that reads or writes the host's files on its behalf.
package confine

import (
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// Access is what a Rule grants beneath its path.
type Access uint8

const (
	// Read is reading files and listing directories.
	Read Access = 1 << iota
	// Exec is executing files.
	Exec
	// Write is creating, writing, truncating, renaming and removing
	// regular files and directories; never symlinks, fifos, sockets or
	// devices, so that nothing a confined process leaves redirects or
	// blocks what another process later opens there. On a file, writing
	// and truncating it.
	Write
	// Device is reading and writing an existing device file (/dev/null)
	// and its ioctls.
	Device
	// List is listing a directory's names, not reading its files (under
	// Landlock the directories below it too; under sandbox-exec the
	// directory alone).
	List
)

// String names the rights, as "read+exec".
func (a Access) String() string {
	var names []string
	for _, n := range []struct {
		a    Access
		name string
	}{{Read, "read"}, {Exec, "exec"}, {Write, "write"}, {Device, "device"}, {List, "list"}} {
		if a&n.a != 0 {
			names = append(names, n.name)
		}
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, "+")
}

// Rule grants Access to Path and everything beneath it. A path that does
// not exist when the process starts grants nothing.
type Rule struct {
	Path   string
	Access Access
}

// Policy is everything a confined process and its descendants may touch
// on the filesystem, and the TCP ports they may connect to; the kernel
// refuses the rest. Looking a path up (stat) is not restricted, only
// opening, executing and changing it. On Linux the process also cannot
// signal, or reach the abstract unix sockets of, processes outside its
// confinement (Landlock ABI 6).
type Policy struct {
	Rules []Rule
	// ConnectTCP are the ports it may connect to over TCP, binding none
	// (Landlock ABI 4; sandbox-exec leaves the network as it is).
	ConnectTCP []uint16
}

// Validate refuses a rule whose path is not absolute and clean, or that
// grants nothing.
func (p Policy) Validate() error {
	var errs []error
	for _, r := range p.Rules {
		if !filepath.IsAbs(r.Path) || filepath.Clean(r.Path) != r.Path {
			errs = append(errs, fmt.Errorf("confine: rule path %q is not absolute and clean", r.Path))
		}
		if r.Access == 0 {
			errs = append(errs, fmt.Errorf("confine: rule for %s grants nothing", r.Path))
		}
	}
	return errors.Join(errs...)
}

// Sorted is the policy's rules in path order, for printing.
func (p Policy) Sorted() []Rule {
	rs := slices.Clone(p.Rules)
	slices.SortFunc(rs, func(a, b Rule) int { return strings.Compare(a.Path, b.Path) })
	return rs
}

// Support is what this system confines processes with.
type Support struct {
	// Mechanism is "landlock" or "sandbox-exec"; "" when there is none.
	Mechanism string
	// Version is the Landlock ABI version (0 otherwise).
	Version int
	// Reason says why there is no mechanism, when there is none.
	Reason string
}

// Available says whether processes can be confined here.
func (s Support) Available() bool { return s.Mechanism != "" }

// String is the mechanism and its version, or why there is none.
func (s Support) String() string {
	switch {
	case s.Mechanism == "":
		return "none (" + s.Reason + ")"
	case s.Version > 0:
		return fmt.Sprintf("%s (ABI %d)", s.Mechanism, s.Version)
	}
	return s.Mechanism
}

// ErrUnsupported is returned by Start where there is no mechanism.
var ErrUnsupported = errors.New("confine: this system cannot confine processes")

// Start starts cmd confined by p; cmd must not be started. Every file
// cmd needs before it runs (its stdin, stdout and stderr) must already be
// open: on Linux, cmd is started from a thread that is itself confined.
func Start(cmd *exec.Cmd, p Policy) error {
	if err := p.Validate(); err != nil {
		return err
	}
	return start(cmd, p)
}

// devices are the device files any program may use.
func devices() []Rule {
	var rules []Rule
	for _, d := range []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"} {
		rules = append(rules, Rule{d, Device})
	}
	return rules
}
