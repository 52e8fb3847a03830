package e2e

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/polecat-sidecar/sidecar/hostd/api"
	"github.com/polecat-sidecar/sidecar/hostd/sandbox"
	"github.com/polecat-sidecar/sidecar/hostd/state"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// forgetRig is hostd (with the stand-in gt and bd, and a stand-in
// container runtime that lists toast's sandbox) and gastown/toast's agent,
// which has fetched its data (hostd keeps its base) and relayed a command
// (hostd made its temporary directory).
type forgetRig struct {
	tw         *Town
	hostd      *Proc
	agent      *Proc
	id         wire.Identity
	runtime    string // the stand-in docker
	removed    string // where it logs what it removes
	socket     string
	addr       string // hostd's
	dir        state.Dir
	root, kept string // toast's data root on the host, and a file in it
}

// newForgetRig starts hostd, whose reaper runs every reap on the
// stand-in runtime (0: never), then toast's agent, and waits for its base
// and its temporary directory.
func newForgetRig(t *testing.T, reap time.Duration) *forgetRig {
	tools := t.TempDir()
	r := &forgetRig{tw: NewTown(t), id: wire.Identity{Rig: "gastown", Name: "toast"},
		runtime: filepath.Join(tools, "docker"), removed: filepath.Join(tools, "removed"), socket: filepath.Join(t.TempDir(), "agent.sock")}
	r.dir = state.For(r.tw.Dir)
	standIn(t, r.runtime, "case \"$1\" in\n"+
		"ps) [ -f "+r.removed+" ] || printf 'gt-gastown-toast\\tid-toast\\tgastown/toast\\t\\n' ;;\n"+
		"container) [ -f "+r.removed+" ] && { echo 'Error: No such container' >&2; exit 1; }; printf 'true\\t\\t\\t\\n' ;;\n"+
		"rm) echo \"$@\" >> "+r.removed+" ;;\n"+
		"*) exit 1 ;;\nesac\n")
	serve := []string{"--sandbox-reap", reap.String(), "--sandbox-runtime", r.runtime}
	r.root = filepath.Join(r.tw.Dir, "gastown", "polecats", "toast")
	r.kept = filepath.Join(r.root, "results", "report.txt")
	if err := os.MkdirAll(filepath.Dir(r.kept), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(r.kept, []byte("the operator's"), 0o644); err != nil {
		t.Fatal(err)
	}
	fake, err := filepath.Abs("testdata/fake-gt.sh")
	if err != nil {
		t.Fatal(err)
	}
	r.hostd, r.addr = r.tw.Serve(append([]string{"--relay-gt", fake, "--relay-bd", fake}, serve...)...)
	r.agent = Start(t, AgentEnv(r.addr, r.tw.Issue(r.id.String(), time.Hour)), "gt-agent",
		"up", "--socket", r.socket, "--data-root", t.TempDir(), "--state-dir", t.TempDir())
	r.tw.WaitStatus(10*time.Second, Connected("toast", ""))
	eventually(t, 10*time.Second, "toast's base kept", func() bool {
		_, err := os.Stat(filepath.Join(r.dir.PolecatData(r.id), "base.json"))
		return err == nil
	})
	shim := exec.Command(filepath.Join(BinDir, "bd"), "show", "log", "relayed")
	shim.Env = append(os.Environ(), "GT_AGENT_SOCKET="+r.socket)
	if out, err := shim.CombinedOutput(); err != nil {
		t.Fatalf("the relayed bd: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(r.dir.RelayTemp(r.id), "ran")); err != nil {
		t.Fatalf("the relayed command left nothing in its temporary directory: %v", err)
	}
	return r
}

// deadPane records a pane for toast as a hostd run killed before it could
// remove its record leaves it.
func (r *forgetRig) deadPane(t *testing.T) string {
	t.Helper()
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	ps := &sandbox.Panes{Dir: r.dir.Panes()}
	if err := ps.Record(r.id, sandbox.Pane{Socket: "/tmp/tmux-gone", ID: "%3", PID: gone.Process.Pid}); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(r.dir.Panes(), "gastown", "toast.json")
}

// queueNudge queues a nudge for toast (disconnected: it waits).
func (r *forgetRig) queueNudge(t *testing.T) {
	t.Helper()
	if out, _ := r.tw.Try("nudge", "gastown/toast", "--mode", "queue", "for toast alone"); !strings.Contains(out, "queued until") {
		t.Fatalf("hostd nudge: %s", out)
	}
}

// checkForgotten fails t unless hostd keeps nothing of toast but its
// revocations: no status row (when hostd runs), no liveness or nudge
// entry, no base, hold, temporary directory or pane record; its data
// root is still there unless Gas Town removed it.
func (r *forgetRig) checkForgotten(t *testing.T, running bool) {
	t.Helper()
	if running {
		if st := r.tw.WaitStatus(time.Second, func(api.Status) bool { return true }); len(st.Polecats) != 0 {
			t.Errorf("status still lists %+v", st.Polecats)
		}
	}
	for _, gone := range []string{r.dir.PolecatData(r.id), r.dir.RelayTemp(r.id), filepath.Join(r.dir.Panes(), "gastown", "toast.json"), filepath.Join(r.dir.StartFailures(), "gastown", "toast.json")} {
		if _, err := os.Lstat(gone); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s is still there (%v)", gone, err)
		}
	}
	for _, f := range []string{r.dir.Liveness(), r.dir.Nudges()} {
		if b, _ := os.ReadFile(f); strings.Contains(string(b), `gastown/toast`) {
			t.Errorf("%s still names toast: %s", f, b)
		}
	}
	if _, err := os.Stat(r.root); errors.Is(err, fs.ErrNotExist) {
		return // Gas Town's nuke
	}
	if b, err := os.ReadFile(r.kept); err != nil || string(b) != "the operator's" {
		t.Errorf("the polecat's data root lost the operator's file: %q, %v", b, err)
	}
}

// TestForgetRemovesState: hostd forget of a polecat whose tunnel is down
// cancels its queued nudges and removes its base and delete hold, its
// relayed commands' temporary directory and an ended hostd run's pane
// record, as well as its status row; its data root stays. A second
// forget finds nothing.
func TestForgetRemovesState(t *testing.T) {
	r := newForgetRig(t, 0)
	pane := r.deadPane(t)
	_ = r.agent.Cmd.Process.Signal(syscall.SIGTERM)
	_ = r.agent.Exited(t, 15*time.Second)
	r.tw.WaitStatus(10*time.Second, InState("toast", "disconnected"))
	r.queueNudge(t)
	starts := &sandbox.Starts{Dir: r.dir.StartFailures()}
	if _, err := starts.Failed(r.id, "image polecat:1 is not among docker's images"); err != nil {
		t.Fatal(err)
	}

	var f api.Forgotten
	if err := json.Unmarshal([]byte(r.tw.Run("forget", "gastown/toast", "--json")), &f); err != nil {
		t.Fatal(err)
	}
	if !f.Listed || f.Last == nil || f.Last.State != "disconnected" || f.Nudges != 1 {
		t.Errorf("forget answered %+v; want toast listed, disconnected, one nudge cancelled", f)
	}
	for _, want := range []string{r.dir.PolecatData(r.id), r.dir.RelayTemp(r.id), pane, starts.File(r.id)} {
		if !strings.Contains(strings.Join(f.Removed, "\n"), want) {
			t.Errorf("forget does not say it removed %s: %v", want, f.Removed)
		}
	}
	r.checkForgotten(t, true)
	if out, err := r.tw.Try("forget", "gastown/toast"); err == nil || !strings.Contains(out, "hostd knows no polecat gastown/toast") {
		t.Errorf("a second forget: %v\n%s", err, out)
	}
}

// TestNukeLeavesNothing: hostd nuke of a connected polecat removes its
// sandbox, revokes it (its agent ends), and once its tunnel is down
// forgets it whole; so does hostd serve's reaper once Gas Town has removed
// the polecat's directory; and so does hostd nuke with no hostd running,
// in the files the next hostd starts from.
func TestNukeLeavesNothing(t *testing.T) {
	t.Run("hostd nuke", func(t *testing.T) {
		r := newForgetRig(t, 0)
		r.deadPane(t)
		out := r.tw.Run("nuke", "gastown/toast", "--runtime", r.runtime)
		for _, want := range []string{"removed gt-gastown-toast, the sandbox of gastown/toast, and revoked its certificates", "forgot gastown/toast",
			"removed " + r.dir.PolecatData(r.id)} {
			if !strings.Contains(out, want) {
				t.Errorf("hostd nuke does not say %q:\n%s", want, out)
			}
		}
		r.checkNuked(t)
		r.checkForgotten(t, true)
	})
	t.Run("the reaper", func(t *testing.T) {
		r := newForgetRig(t, 100*time.Millisecond)
		r.deadPane(t)
		if err := os.RemoveAll(r.root); err != nil { // gt polecat nuke
			t.Fatal(err)
		}
		r.checkNuked(t)
		r.tw.WaitStatus(10*time.Second, func(st api.Status) bool { return len(st.Polecats) == 0 })
		eventually(t, 5*time.Second, "toast's base removed", func() bool {
			_, err := os.Lstat(r.dir.PolecatData(r.id))
			return errors.Is(err, fs.ErrNotExist)
		})
		r.checkForgotten(t, true)
	})
	t.Run("hostd nuke with no hostd running", func(t *testing.T) {
		r := newForgetRig(t, 0)
		r.deadPane(t)
		_ = r.agent.Cmd.Process.Signal(syscall.SIGTERM)
		_ = r.agent.Exited(t, 15*time.Second)
		r.tw.WaitStatus(10*time.Second, InState("toast", "disconnected"))
		r.queueNudge(t)
		_ = r.hostd.Cmd.Process.Signal(syscall.SIGTERM)
		_ = r.hostd.Exited(t, 10*time.Second)
		for _, f := range []string{r.dir.Liveness(), r.dir.Nudges()} {
			if b, _ := os.ReadFile(f); !strings.Contains(string(b), `gastown/toast`) {
				t.Fatalf("%s does not name toast before the nuke: %s", f, b)
			}
		}
		out := r.tw.Run("nuke", "gastown/toast", "--runtime", r.runtime)
		if !strings.Contains(out, "forgot gastown/toast") || !strings.Contains(out, "cancelled 1 queued nudge") {
			t.Errorf("hostd nuke with no hostd running:\n%s", out)
		}
		r.checkForgotten(t, false)
		r.tw.ServeOn(r.addr)
		if st := r.tw.WaitStatus(5*time.Second, func(api.Status) bool { return true }); len(st.Polecats) != 0 {
			t.Errorf("hostd started again lists %+v", st.Polecats)
		}
	})
}

// checkNuked fails t unless toast's sandbox was removed, its certificate
// revoked and its agent ended.
func (r *forgetRig) checkNuked(t *testing.T) {
	t.Helper()
	eventually(t, 10*time.Second, "toast's sandbox removed", func() bool {
		b, _ := os.ReadFile(r.removed)
		return strings.Contains(string(b), "rm -f -v gt-gastown-toast") || // hostd nuke, by its name
			strings.Contains(string(b), "rm -f -v id-toast") // the reaper, by its ID
	})
	if err := r.agent.Exited(t, 15*time.Second); err == nil {
		t.Error("the revoked agent exited 0")
	}
	if !strings.Contains(r.tw.Run("cert", "list"), "revoked") {
		t.Error("toast's certificate is not revoked")
	}
}

// eventually waits up to d for cond, failing t with what it waited for.
func eventually(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(d); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, d)
		}
	}
}
