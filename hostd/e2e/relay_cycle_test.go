package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/polecat-sidecar/sidecar/hostd/sandbox"
	"github.com/polecat-sidecar/sidecar/hostd/state"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// TestRelayCycleRespawnsPane: a polecat's relayed gt handoff --cycle
// that succeeds has hostd serve respawn the host pane hostd run recorded
// (here a pane that logs each process it starts, and its record written
// as hostd run writes it), once; a failed handoff, a dry run, and a
// plain handoff leave the pane alone.
func TestRelayCycleRespawnsPane(t *testing.T) {
	r := newRelayRig(t, rigOpts{})
	sock, pids := TmuxSocket(t), filepath.Join(t.TempDir(), "pids")
	out, err := exec.Command("tmux", "-S", sock, "new-session", "-d", "-P", "-F", "#{pane_id}", "-s", "gas-furiosa",
		"sh -c 'echo $$ >> "+pids+"; exec sleep 100'").CombinedOutput()
	if err != nil {
		t.Fatalf("tmux new-session: %v: %s", err, out)
	}
	started := func() []string {
		b, _ := os.ReadFile(pids)
		return strings.Fields(string(b))
	}
	waitStarted(t, started, 1)
	pid, _ := strconv.Atoi(started()[0])
	panes := &sandbox.Panes{Dir: state.For(r.tw.Dir).Panes()}
	if err := panes.Record(wire.Identity{Rig: "gastown", Name: "furiosa"}, sandbox.Pane{Socket: sock, ID: strings.TrimSpace(string(out)), PID: pid}); err != nil {
		t.Fatal(err)
	}

	for _, tt := range []struct {
		args []string
		code int
	}{
		{[]string{"handoff", "exit", "3", "--cycle"}, 3},
		{[]string{"handoff", "exit", "0", "--cycle", "-n"}, 0},
		{[]string{"handoff", "exit", "0"}, 0},
		{[]string{"nudge", "exit", "0", "--", "--cycle"}, 0},
	} {
		if res := r.run(t, nil, "gt", tt.args...); res.code != tt.code {
			t.Fatalf("gt %q: exit %d, want %d (stderr %s)", tt.args, res.code, tt.code, res.stderr)
		}
	}
	time.Sleep(300 * time.Millisecond)
	if got := started(); len(got) != 1 {
		t.Fatalf("the pane was respawned without a successful gt handoff --cycle: processes %q", got)
	}

	if res := r.run(t, nil, "gt", "handoff", "exit", "0", "--cycle"); res.code != 0 {
		t.Fatalf("gt handoff --cycle: exit %d (stderr %s)", res.code, res.stderr)
	}
	waitStarted(t, started, 2)
	for deadline := time.Now().Add(5 * time.Second); !strings.Contains(r.hostd.Output(), "respawned the polecat's pane"); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("hostd logged no respawn:\n%s", r.hostd.Output())
		}
	}
}

func waitStarted(t *testing.T, started func() []string, n int) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); len(started()) < n; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the pane started %d processes, want %d", len(started()), n)
		}
	}
}
