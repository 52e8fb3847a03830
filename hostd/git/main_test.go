package git

import (
	"os"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"
)

// TestMain lets the test binary be hostd's git hooks, as hostd is (New
// links them to the running binary), so a test that pushes through
// Service runs the real hooks; otherwise it runs the tests, failing them
// on a goroutine left running.
func TestMain(m *testing.M) {
	switch filepath.Base(os.Args[0]) {
	case PreReceive:
		os.Exit(RunPreReceive(os.Stdin, os.Stderr))
	case PostReceive:
		os.Exit(RunPostReceive(os.Stdin))
	case PushToCheckout:
		os.Exit(RunPushToCheckout(os.Args[1:], os.Stderr))
	}
	goleak.VerifyTestMain(m)
}
