package claude_test

import (
	"fmt"

	"github.com/polecat-sidecar/sidecar/sync/claude"
)

// A hook command naming the host's gt by its path runs the container's
// shim once the path is gone.
func ExampleRewriteCommand() {
	fmt.Println(claude.RewriteCommand("/home/u/go/bin/gt prime --hook && /home/u/go/bin/gt mail check --inject"))
	// Output: gt prime --hook && gt mail check --inject
}
