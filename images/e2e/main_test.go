//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	harness "github.com/polecat-sidecar/sidecar/hostd/e2e"
)

// TestMain plays a container role when asked to (the stand-in claude, a
// probe, the hostile client); otherwise it builds hostd, runs the suite,
// prints the summary and undoes whatever the suite set up, also when
// interrupted.
func TestMain(m *testing.M) {
	// A role first: 'docker exec' inherits the container's E2E_PANE.
	if role := os.Getenv(roleEnv); role != "" {
		os.Exit(runRole(role, os.Args[1:]))
	}
	if mode := os.Getenv(harness.PaneEnv); mode != "" {
		os.Exit(harness.PaneProgram(mode))
	}
	if filepath.Base(os.Args[0]) == "claude" {
		// The stand-in claude started without the suite's variables:
		// Gas Town's gt handoff --cycle restarts the agent without the
		// runtime's env.
		os.Exit(harness.PaneProgram("tui"))
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() {
		s := <-sig
		fmt.Fprintf(os.Stderr, "\ne2e: %v: cleaning up\n", s)
		undo.run()
		os.Exit(130)
	}()
	cleanup, err := harness.Build()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	code := m.Run()
	undo.run()
	cleanup()
	summary.print()
	os.Exit(code)
}

// undoStack is what the suite must undo at exit, newest first: containers,
// networks, firewall rules. It runs once, at the end or on a signal.
type undoStack struct {
	mu   sync.Mutex
	fns  []func()
	done bool
}

// undo is the suite's undo stack.
var undo undoStack

// push adds f to run at exit.
func (u *undoStack) push(f func()) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.fns = append(u.fns, f)
}

// run runs everything pushed, newest first, once.
func (u *undoStack) run() {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.done {
		return
	}
	u.done = true
	for i := len(u.fns) - 1; i >= 0; i-- {
		u.fns[i]()
	}
}

// summaryTable collects each check's result and time for the table the
// suite prints at the end.
type summaryTable struct {
	mu   sync.Mutex
	rows []summaryRow
}

// summaryRow is one check.
type summaryRow struct {
	name   string
	passed bool
	took   time.Duration
}

// summary is the suite's table.
var summary summaryTable

// add records a check.
func (s *summaryTable) add(name string, passed bool, took time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rows = append(s.rows, summaryRow{name, passed, took})
}

// print writes the table to stdout.
func (s *summaryTable) print() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.rows) == 0 {
		return
	}
	var total time.Duration
	fmt.Printf("\n%-66s %-6s %8s\n", "check", "result", "seconds")
	for _, r := range s.rows {
		res := "ok"
		if !r.passed {
			res = "FAIL"
		}
		total += r.took
		fmt.Printf("%-66s %-6s %8.1f\n", r.name, res, r.took.Seconds())
	}
	fmt.Printf("%-66s %-6s %8.1f\n", "total", "", total.Seconds())
}
