//go:build !linux && !darwin

package confine

import "os/exec"

// Probe says there is no mechanism on this system.
func Probe() Support {
	return Support{Reason: "only Linux (Landlock) and macOS (sandbox-exec) can confine processes"}
}

func start(*exec.Cmd, Policy) error { return ErrUnsupported }

// System is empty where nothing is confined.
func System() []Rule { return nil }
