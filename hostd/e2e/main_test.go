package e2e

import (
	"fmt"
	"os"
	"testing"
)

// TestMain builds the binaries once for every test and benchmark here; run
// as the per-call baseline client (perCallEnv set), it is that client, and
// as the nudge tests' pane program (PaneEnv set), that program.
func TestMain(m *testing.M) {
	if os.Getenv(perCallEnv) != "" {
		os.Exit(perCallClient(os.Args[1:]))
	}
	if mode := os.Getenv(PaneEnv); mode != "" {
		os.Exit(PaneProgram(mode))
	}
	cleanup, err := Build()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	code := m.Run()
	cleanup()
	os.Exit(code)
}
