package git

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/polecat-sidecar/sidecar/hostd/git/hook"
	"go.uber.org/goleak"
)

// TestMain lets the test binary be hostd's git hooks, as hostd is (New
// links them to the running binary), so a test that pushes through
// Service runs the real hooks; otherwise it runs the tests, failing them
// on a goroutine left running.
func TestMain(m *testing.M) {
	switch filepath.Base(os.Args[0]) {
	case hook.PreReceive:
		os.Exit(hook.RunPreReceive(os.Stdin, os.Stderr))
	case hook.PostReceive:
		os.Exit(hook.RunPostReceive(os.Stdin))
	case hook.PushToCheckout:
		os.Exit(hook.RunPushToCheckout(os.Args[1:], os.Stderr))
	}
	goleak.VerifyTestMain(m)
}
