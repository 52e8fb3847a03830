//go:build darwin

package confine

import (
	"fmt"
	"os"
	"os/exec"
)

// sandboxExec is macOS's sandbox-exec, which starts a program under a
// profile given with -p.
const sandboxExec = "/usr/bin/sandbox-exec"

// Probe says whether sandbox-exec is there.
func Probe() Support {
	if _, err := os.Stat(sandboxExec); err != nil {
		return Support{Reason: fmt.Sprintf("%s is missing: %v", sandboxExec, err)}
	}
	return Support{Mechanism: "sandbox-exec"}
}

// start runs cmd's program through sandbox-exec with p's profile.
func start(cmd *exec.Cmd, p Policy) error {
	if s := Probe(); !s.Available() {
		return fmt.Errorf("%w: %s", ErrUnsupported, s.Reason)
	}
	profile, err := Profile(p)
	if err != nil {
		return err
	}
	args := append([]string{"sandbox-exec", "-p", profile, cmd.Path}, cmd.Args[1:]...)
	cmd.Path, cmd.Args = sandboxExec, args
	return cmd.Start()
}

// System is what every program needs on macOS: the system's programs,
// libraries and frameworks, Homebrew's (read and run: Gas Town's tools
// are usually installed there, with the libraries bd links), the
// system's configuration and the harmless devices.
func System() []Rule {
	var rules []Rule
	for _, d := range []string{"/usr", "/bin", "/sbin", "/System", "/Library/Apple", "/opt/homebrew"} {
		rules = append(rules, Rule{d, Read | Exec})
	}
	for _, d := range []string{"/private/etc", "/private/var/db/timezone", "/private/var/db/dyld", "/Library/Preferences"} {
		rules = append(rules, Rule{d, Read})
	}
	return append(rules, devices()...)
}
