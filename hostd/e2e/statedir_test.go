package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/polecat-sidecar/sidecar/hostd/api"
)

// TestStateDirLocked: a second agent given a state directory another agent
// is using, by flag or environment, refuses to start and says which
// directory and how to give it its own; once the first is killed, the
// directory is free again.
func TestStateDirLocked(t *testing.T) {
	t.Parallel()
	tw := NewTown(t)
	_, addr := tw.Serve()
	env := AgentEnv(addr, tw.Issue("gastown/furiosa", time.Hour))
	state := t.TempDir()
	first := Start(t, env, "gt-agent", "up", "--state-dir", state)
	tw.WaitStatus(10*time.Second, Connected("furiosa", ""))
	for name, second := range map[string]*Proc{
		"flag":        Start(t, env, "gt-agent", "up", "--state-dir", state),
		"environment": Start(t, append(env, "GT_AGENT_STATE_DIR="+state), "gt-agent", "up"),
	} {
		err := second.Exited(t, 10*time.Second)
		out := second.Output()
		if err == nil || !strings.Contains(out, "state directory "+state+": another gt-agent is using it: give each agent its own --state-dir (env GT_AGENT_STATE_DIR)") {
			t.Errorf("second agent on the same state directory (%s): %v\n%s", name, err, out)
		}
	}
	_ = first.Cmd.Process.Kill()
	_ = first.Exited(t, 5*time.Second)
	next := Start(t, env, "gt-agent", "up", "--state-dir", state)
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(next.Output(), "relaying gt/bd"); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("an agent on the state directory of a killed one did not start:\n%s", next.Output())
		}
	}
}

// TestStateDirKeptEmptyRoot: a new container whose state directory was
// kept (a copy of one that fetched the polecat's data) but whose data root
// is empty deletes nothing on the host. While hostd refuses its fetch (over
// sync.agent_transfers_per_hour), its checkpoints and teardown send
// nothing and the operator's pull is refused with the reason; once hostd
// lets it, it fetches the data, and its checkpoints, a pull and its
// teardown change nothing on the host.
func TestStateDirKeptEmptyRoot(t *testing.T) {
	t.Parallel()
	files := map[string]string{"CLAUDE.md": "prime\n", "AGENTS.md": "agents\n", "results/report.txt": "report"}
	tw := NewTown(t)
	host := filepath.Join(tw.Dir, "gastown", "polecats", "furiosa")
	for rel, content := range files {
		_ = os.MkdirAll(filepath.Dir(filepath.Join(host, rel)), 0o755)
		_ = os.WriteFile(filepath.Join(host, rel), []byte(content), 0o644)
	}
	hostIntact := func(when string) {
		t.Helper()
		for rel, content := range files {
			if b, err := os.ReadFile(filepath.Join(host, rel)); err != nil || string(b) != content {
				t.Fatalf("%s: the host's %s holds %q (%v), want %q", when, rel, b, err, content)
			}
		}
	}
	stop := func(p *Proc) {
		t.Helper()
		_ = p.Cmd.Process.Signal(syscall.SIGTERM)
		if err := p.Exited(t, 10*time.Second); err != nil {
			t.Errorf("agent exit: %v\n%s", err, p.Output())
		}
	}
	// Two transfers an hour: the first agent's fetch and final upload.
	hostd, addr := tw.Serve("--sync-agent-transfers-per-hour", "2")
	env := AgentEnv(addr, tw.Issue("gastown/furiosa", time.Hour))
	state, first := t.TempDir(), t.TempDir()
	p := Start(t, env, "gt-agent", "up", "--data-root", first, "--state-dir", state)
	waitFile(t, filepath.Join(first, "results/report.txt"), "report", 10*time.Second)
	stop(p)
	kept := filepath.Join(t.TempDir(), "kept")
	if err := os.CopyFS(kept, os.DirFS(state)); err != nil {
		t.Fatal(err)
	}

	empty := t.TempDir()
	p = Start(t, env, "gt-agent", "up", "--data-root", empty, "--state-dir", kept, "--sync-checkpoint", "300ms")
	tw.WaitStatus(10*time.Second, Connected("furiosa", ""))
	eventually(t, 15*time.Second, "the agent asking hostd for the data and refused (no transfer left this hour)", func() bool {
		return strings.Contains(p.Output(), "fetching the polecat's data failed")
	})
	out, err := tw.Try("sync", "pull", "gastown/furiosa")
	if err == nil || !strings.Contains(out, "this container has not received the polecat's data yet (its data root "+empty) {
		t.Errorf("pull from a container without the data: %v\n%s", err, out)
	}
	t.Logf("refused pull:\n%s", out)
	if strings.Contains(out, "archive refused") || strings.Contains(out, "0 file(s)") {
		t.Errorf("the refused pull reads as if hostd refused an archive:\n%s", out)
	}
	// The operator's push still reaches it: its pull first has nothing to
	// take.
	if out, err := tw.Try("sync", "push", "gastown/furiosa"); err != nil {
		t.Fatalf("push to a container without the data: %v\n%s", err, out)
	}
	waitFile(t, filepath.Join(empty, "results/report.txt"), "report", 10*time.Second)
	stop(p)
	hostIntact("after checkpoints, a pull and the teardown of a container without the data")

	_ = hostd.Cmd.Process.Kill()
	_ = hostd.Exited(t, 5*time.Second)
	tw.ServeOn(addr)
	fresh := filepath.Join(t.TempDir(), "work") // not even made yet
	p = Start(t, env, "gt-agent", "up", "--data-root", fresh, "--state-dir", kept, "--sync-checkpoint", "300ms")
	for rel, content := range files {
		waitFile(t, filepath.Join(fresh, rel), content, 10*time.Second)
	}
	eventually(t, 15*time.Second, "two checkpoints of the unchanged root", func() bool {
		return strings.Count(p.Output(), "sync: checkpoint sent") >= 2
	})
	tw.Run("sync", "pull", "gastown/furiosa")
	stop(p)
	hostIntact("once the new container fetched the data")
	var recs []api.SyncRecord
	if err := json.Unmarshal([]byte(tw.Run("sync", "log", "--json")), &recs); err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if r.Deleted > 0 {
			t.Errorf("%s (%s) deleted %d host file(s)", r.Op, r.Reason, r.Deleted)
		}
	}
}
