package e2e

import (
	"flag"
	"fmt"
	"os"
	"testing"
)

// parallel is how many t.Parallel tests run at once unless -parallel says
// otherwise. The tests that call t.Parallel mostly wait (idle timeouts,
// backoff, grace periods, certificate lifetimes) with a hostd and an agent
// idle, so more of them than this machine kind's two cores fit; tests that
// assert latency or load the machine (hostile, relay limits, git, tight
// liveness bounds) stay serial, and Go runs every serial test before the
// parallel ones.
const parallel = 4

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
	flag.Parse()
	explicit := false
	flag.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "test.parallel" })
	if !explicit {
		_ = flag.Set("test.parallel", fmt.Sprint(parallel))
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
