package e2e

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// standInRuntime is docker as hostd run uses it, its sandbox a real
// gt-agent process on this host: create keeps the labels and the
// environment it is given (the join token among them), start runs
// 'gt-agent up --watch-session polecat' with them and a work directory,
// tmux server and git port of its own, inspect says whether it runs, rm
// ends it. Every command line is logged to calls.
const standInRuntime = `#!/bin/sh
d=@DIR@
echo "$*" >> $d/calls
case "$1" in
container)
  [ -e $d/made ] || { echo "Error response from daemon: No such container" >&2; exit 1; }
  if kill -0 "$(cat $d/pid 2>/dev/null)" 2>/dev/null; then r=true s=running; else r=false s=exited; fi
  printf '%s\t%s\t%s\t%s\t%s\t0\t\n' $r "$(cat $d/town)" "$(cat $d/polecat)" "$(cat $d/home)" $s;;
create)
  : > $d/env
  while [ $# -gt 0 ]; do
    case "$1" in
    --label) k=${2%%=*}; printf '%s' "${2#*=}" > "$d/${k##*.}"; shift;;
    -e) case "$2" in *=*) echo "$2";; *) echo "$2=$(printenv "$2")";; esac >> $d/env; shift;;
    esac
    shift
  done
  touch $d/made;;
start)
  while IFS= read -r kv; do export "$kv"; done < $d/env
  GT_AGENT_STATE_DIR=$d/state GT_AGENT_SOCKET=$d/agent.sock GT_AGENT_GIT_LISTEN=127.0.0.1:0 GT_AGENT_WORK_DIR=$d/work \
    GT_AGENT_TMUX_SOCKET=$d/tmux.sock setsid @AGENT@ up --watch-session polecat >> $d/agent.log 2>&1 &
  echo $! > $d/pid;;
rm) kill "$(cat $d/pid)"; rm -f $d/made;;
esac
exit 0
`

// TestHostdRun is hostd run with no docker exec: every step after the
// runtime made and started the sandbox goes over the polecat's own
// tunnel. The first session makes the sandbox, whose agent joins with
// the one-time token, clones the rig on the polecat's branch through its
// git port, and runs the command there with Gas Town's variables; hostd
// run exits with its status. A session outlives hostd serve's restart
// (the tunnel and hostd run's stream break): hostd run waits for it on
// the next stream and exits with its status. A signal ends the session,
// by its tag, and leaves the sandbox. The runtime is a stand-in whose
// sandbox is a gt-agent process on this host (images/e2e runs the same
// in containers).
func TestHostdRun(t *testing.T) {
	g := NewGitTown(t)
	wt := filepath.Join(g.Dir, "gastown", "polecats", "toast", "gastown")
	g.Git(t, g.Repo, "worktree", "add", "-q", "-b", "polecat/toast-1", wt, "main")
	d := t.TempDir()
	runtime := filepath.Join(d, "docker")
	script := strings.NewReplacer("@DIR@", d, "@AGENT@", filepath.Join(BinDir, "gt-agent")).Replace(standInRuntime)
	if err := os.WriteFile(runtime, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if b, err := os.ReadFile(filepath.Join(d, "pid")); err == nil {
			_ = exec.Command("kill", strings.TrimSpace(string(b))).Run()
		}
		_ = exec.Command("tmux", "-S", filepath.Join(d, "tmux.sock"), "kill-server").Run()
		if t.Failed() {
			log, _ := os.ReadFile(filepath.Join(d, "agent.log"))
			t.Logf("the sandbox's agent:\n%s", log)
		}
	})
	_, port, _ := net.SplitHostPort(g.Addr)
	clone := filepath.Join(d, "work", "gastown")
	// run starts hostd run as Gas Town's pane does (no terminal here).
	run := func(script string) (*exec.Cmd, *strings.Builder) {
		t.Helper()
		cmd := exec.Command(filepath.Join(BinDir, "hostd"), "--town", g.Dir, "run", "--runtime", runtime, "--image", "polecat:e2e",
			"--url", "https://localhost:"+port, "--transport", "tcp", "--env", "E2E_SECRET", "--", "/bin/sh", "-c", script)
		cmd.Env = append(os.Environ(), "GT_RIG=gastown", "GT_POLECAT=toast", "E2E_SECRET=s3cr3t", "HOSTD_LIVENESS_BEAT_INTERVAL=1s")
		out := &strings.Builder{}
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		return cmd, out
	}
	// exited waits for hostd run to end and checks its status.
	exited := func(cmd *exec.Cmd, out *strings.Builder, want int) {
		t.Helper()
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(2 * time.Minute):
			t.Fatalf("hostd run still runs; it printed:\n%s", out)
		}
		if got := cmd.ProcessState.ExitCode(); got != want {
			t.Fatalf("hostd run exited with %d, want %d; it printed:\n%s", got, want, out)
		}
	}
	// appears waits for a file the session writes in its clone.
	appears := func(name string) string {
		t.Helper()
		for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			if b, err := os.ReadFile(filepath.Join(clone, name)); err == nil {
				return string(b)
			}
		}
		t.Fatalf("the session never wrote %s", name)
		return ""
	}

	cmd, out := run(`echo "$GT_POLECAT $E2E_SECRET on $(git branch --show-current)" > seen; exit 7`)
	exited(cmd, out, 7)
	if seen := appears("seen"); seen != "toast s3cr3t on polecat/toast-1\n" {
		t.Errorf("the first session saw %q", seen)
	}
	if !strings.Contains(out.String(), "hostd run: cloned the rig into "+clone+" on polecat/toast-1") {
		t.Errorf("hostd run did not say it cloned the rig:\n%s", out)
	}

	cmd, out = run(`touch started; while [ ! -e release ]; do sleep 0.1; done; exit 3`)
	appears("started")
	_ = g.Hostd.Cmd.Process.Kill()
	_ = g.Hostd.Exited(t, 10*time.Second)
	g.Hostd = g.ServeOn(g.Addr)
	g.WaitStatus(30*time.Second, Connected("toast", "tcp")) // sandbox.transport
	if err := os.WriteFile(filepath.Join(clone, "release"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	exited(cmd, out, 3)

	cmd, out = run(`touch signalled; exec sleep 600`)
	appears("signalled")
	_ = cmd.Process.Signal(syscall.SIGTERM)
	exited(cmd, out, 128+int(syscall.SIGTERM))
	if err := exec.Command("tmux", "-S", filepath.Join(d, "tmux.sock"), "has-session", "-t", "=polecat").Run(); err == nil {
		t.Error("the session runs on after hostd run was signalled")
	}
	if b, _ := os.ReadFile(filepath.Join(d, "pid")); exec.Command("kill", "-0", strings.TrimSpace(string(b))).Run() != nil {
		t.Error("the sandbox went with the session")
	}
	calls, _ := os.ReadFile(filepath.Join(d, "calls"))
	if strings.Contains("\n"+string(calls), "\nexec ") || strings.Count("\n"+string(calls), "\ncreate ") != 1 {
		t.Errorf("the runtime ran:\n%s\nwant one create and no exec", calls)
	}
}
