//go:build linux

// Command gt is the gt and bd commands in a polecat's container (bd is a
// link to it): it relays the command line it was started with to the
// host through the running gt-agent and exits with the host command's
// status. It is gt-agent's shim (package shim) as a program of its own, so
// that a relayed command does not pay for initialising gt-agent's
// packages (tunnel, QUIC, metrics, configuration) on every call.
package main

import (
	"os"
	"path/filepath"

	"github.com/polecat-sidecar/sidecar/agent/shim"
)

func main() {
	name := filepath.Base(os.Args[0])
	if name != "bd" {
		name = "gt" // however it is installed, it is gt unless called bd
	}
	sh := shim.Shim{Name: name, Socket: shim.SocketPath(), Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr}
	os.Exit(sh.Run(os.Args[1:]))
}
