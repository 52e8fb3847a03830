package sandbox

import (
	"flag"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/polecat-sidecar/sidecar/agent/liveness"
)

// TestMain is also 'gt-agent session-run' for the sessions the tests start
// (liveness.StartSession runs its own binary, this one, under that name);
// otherwise it runs the tests, failing them on a goroutine left running.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "session-run" {
		fs := flag.NewFlagSet("session-run", flag.ExitOnError)
		status := fs.String("status-file", "", "")
		dir := fs.String("dir", "", "")
		_ = fs.Parse(os.Args[2:])
		os.Exit(liveness.RunAndRecord(*status, *dir, fs.Args()))
	}
	goleak.VerifyTestMain(m)
}
