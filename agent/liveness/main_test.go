package liveness

import (
	"flag"
	"os"
	"testing"
)

// TestMain is also 'gt-agent session-run' for the sessions the tests start
// (StartSession runs its own binary, this one, under that name).
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "session-run" {
		fs := flag.NewFlagSet("session-run", flag.ExitOnError)
		status := fs.String("status-file", "", "")
		dir := fs.String("dir", "", "")
		_ = fs.Parse(os.Args[2:])
		os.Exit(RunAndRecord(*status, *dir, fs.Args()))
	}
	os.Exit(m.Run())
}
