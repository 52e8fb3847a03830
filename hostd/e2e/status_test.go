package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/polecat-sidecar/sidecar/hostd/api"
	"github.com/polecat-sidecar/sidecar/hostd/state"
	"github.com/polecat-sidecar/sidecar/tunnel/tunneltest"
)

// watchFor runs hostd status --watch with args, its output a pipe, until
// it has printed n times what marks one status, and returns what it printed
// once SIGINT has ended it.
func watchFor(t *testing.T, tw *Town, n int, mark string, args ...string) string {
	t.Helper()
	p := Start(t, nil, "hostd", append([]string{"--town", tw.Dir, "status", "--watch"}, args...)...)
	eventually(t, 30*time.Second, fmt.Sprintf("status --watch printing %d statuses", n), func() bool { return strings.Count(p.Output(), mark) >= n })
	if err := p.Cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if err := p.Exited(t, 5*time.Second); err != nil {
		t.Fatalf("status --watch ended with %v:\n%s", err, p.Output())
	}
	return p.Output()
}

// TestStatusWatch: status --watch into a pipe writes no terminal codes,
// one table after another with a blank line between; with --json, one
// whole status a line.
func TestStatusWatch(t *testing.T) {
	tw := NewTown(t)
	_, addr := tw.Serve()
	Start(t, AgentEnv(addr, tw.Issue("gastown/furiosa", time.Hour)), "gt-agent", "up", "--watch-process", "none")
	tw.WaitStatus(10*time.Second, Connected("furiosa", ""))

	out := watchFor(t, tw, 2, "\ngastown/furiosa ")
	if strings.Contains(out, "\x1b") {
		t.Errorf("terminal codes written into a pipe: %q", out)
	}
	tables := strings.Split(strings.TrimSuffix(out, "\n"), "\n\n")
	if len(tables) < 2 {
		t.Fatalf("%d table(s), want at least 2 blank-line separated:\n%s", len(tables), out)
	}
	for _, tb := range tables {
		if !strings.HasPrefix(tb, "hostd ") || !strings.Contains(tb, "\n1 polecat: ") || !strings.Contains(tb, "\ngastown/furiosa ") {
			t.Errorf("a table is not a whole status:\n%s", tb)
		}
	}

	out = watchFor(t, tw, 2, "\n", "--json")
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	for _, l := range lines {
		var st api.Status
		if err := json.Unmarshal([]byte(l), &st); err != nil || len(st.Polecats) != 1 || st.Polecats[0].Name != "furiosa" {
			t.Errorf("a line is not one whole status (%v): %q", err, l)
		}
	}
}

// TestForget: hostd forget refuses a polecat whose tunnel is up; once it
// is down, forget removes it from status, /metrics and liveness.json,
// and a hostd started again does not bring it back.
func TestForget(t *testing.T) {
	tw := NewTown(t)
	metrics := tunneltest.FreeAddr(t)
	hostd, addr := tw.Serve("--metrics-listen", metrics)
	agent := Start(t, AgentEnv(addr, tw.Issue("gastown/furiosa", time.Hour)), "gt-agent", "up", "--watch-process", "none")
	tw.WaitStatus(10*time.Second, Connected("furiosa", ""))
	scrape(t, metrics, 5*time.Second, []string{`sidecar_polecat_state{polecat="furiosa",rig="gastown"`})

	if out, err := tw.Try("forget", "gastown/furiosa"); err == nil || !strings.Contains(out, "gastown/furiosa is connected (its tunnel is up): hostd forgets only a polecat whose tunnel is down") {
		t.Fatalf("forget of a connected polecat: %v\n%s", err, out)
	}
	_ = agent.Cmd.Process.Signal(syscall.SIGTERM)
	_ = agent.Exited(t, 15*time.Second)
	tw.WaitStatus(10*time.Second, InState("furiosa", "disconnected"))

	if out := tw.Run("forget", "gastown/furiosa"); !strings.HasPrefix(out, "forgot gastown/furiosa (disconnected for ") {
		t.Errorf("forget printed %q", out)
	}
	if st := tw.WaitStatus(time.Second, func(api.Status) bool { return true }); len(st.Polecats) != 0 {
		t.Errorf("status after forget: %+v", st.Polecats)
	}
	if body := scrape(t, metrics, time.Second, nil); strings.Contains(body, `polecat="furiosa"`) {
		t.Errorf("/metrics still has furiosa after forget")
	}
	kept, err := os.ReadFile(state.For(tw.Dir).Liveness())
	if err != nil || strings.Contains(string(kept), "furiosa") {
		t.Errorf("liveness.json after forget (%v): %s", err, kept)
	}
	if out, err := tw.Try("forget", "gastown/furiosa"); err == nil || !strings.Contains(out, "hostd knows no polecat gastown/furiosa") {
		t.Errorf("second forget: %v\n%s", err, out)
	}

	_ = hostd.Cmd.Process.Signal(syscall.SIGTERM)
	_ = hostd.Exited(t, 10*time.Second)
	tw.ServeOn(addr)
	if st := tw.WaitStatus(5*time.Second, func(api.Status) bool { return true }); len(st.Polecats) != 0 {
		t.Errorf("a restarted hostd brought back %+v", st.Polecats)
	}
}
