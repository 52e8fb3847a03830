// Command hostd is the operator-side daemon of polecat-sidecar: it
// terminates the polecats' tunnels, owns the CA and certificates, and shows
// every polecat's state. Run 'hostd --help'. Its commands are hostd/cli's.
package main

import (
	"os"
	"path/filepath"

	"github.com/polecat-sidecar/sidecar/hostd/cli"
	"github.com/polecat-sidecar/sidecar/hostd/git/hook"
	"github.com/polecat-sidecar/sidecar/internal/exit"
)

func main() {
	// hostd is also the git hooks it installs for receive-pack.
	switch filepath.Base(os.Args[0]) {
	case hook.PreReceive:
		os.Exit(hook.RunPreReceive(os.Stdin, os.Stderr))
	case hook.PostReceive:
		os.Exit(hook.RunPostReceive(os.Stdin))
	case hook.PushToCheckout:
		os.Exit(hook.RunPushToCheckout(os.Args[1:], os.Stderr))
	}
	root := cli.NewRoot()
	os.Exit(exit.Code(root.Execute(), "hostd", root.ErrOrStderr()))
}
