package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/polecat-sidecar/sidecar/hostd/api"

	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// lines counts the lines of a file.
func lines(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "\n")
}

// TestAgentRestartAdoptsSession: a polecat's session outlives its agent.
// An agent killed (SIGKILL) or stopped (SIGTERM) and started again while
// the polecat runs adopts the session: the command is not started twice,
// and hostd shows the polecat working again. A session whose command has
// exited meanwhile is started afresh.
func TestAgentRestartAdoptsSession(t *testing.T) {
	t.Parallel()
	marker := filepath.Join(t.TempDir(), "starts")
	lp := newLivePolecat(t, nil, false, "sh", "-c", "echo $$ >> "+marker+"; exec sleep 300")
	pid := lp.commandPID(t)
	furiosa := wire.Identity{Rig: "gastown", Name: "furiosa"}
	for _, sig := range []syscall.Signal{syscall.SIGKILL, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			_ = lp.agent.Cmd.Process.Signal(sig)
			_ = lp.agent.Exited(t, 5*time.Second)
			restarted := time.Now()
			lp.agent = Start(t, lp.env, "gt-agent", lp.args...)
			lp.tw.WaitStatus(15*time.Second, func(st api.Status) bool {
				for _, p := range st.Polecats {
					if p.Name == "furiosa" && p.Connected && p.State == "working" && p.Since.After(restarted) {
						return true
					}
				}
				return false
			})
			if n := lines(t, marker); n != 1 {
				t.Fatalf("the command was started %d times, want once", n)
			}
			if got := lp.commandPID(t); got != pid {
				t.Errorf("command pid %d, want the adopted %d", got, pid)
			}
			if !strings.Contains(lp.agent.Output(), "adopted the running session") {
				t.Errorf("the agent does not say it adopted the session:\n%s", lp.agent.Output())
			}
			d, err := lp.tw.Client().Polecat(context.Background(), api.Identity(furiosa))
			if err != nil || d.SessionState != "running" {
				t.Errorf("hostd shows session %q (%v), want running", d.SessionState, err)
			}
		})
	}

	// The command exits while no agent runs: the next agent records the
	// exit and starts it afresh.
	_ = lp.agent.Cmd.Process.Signal(syscall.SIGTERM)
	_ = lp.agent.Exited(t, 5*time.Second)
	_ = syscall.Kill(pid, syscall.SIGTERM)
	paneDead := func() bool {
		out, _ := exec.Command("tmux", "-S", lp.tmux, "display-message", "-p", "-t", "=polecat:", "#{pane_dead}").Output()
		return strings.TrimSpace(string(out)) == "1"
	}
	eventually(t, 15*time.Second, "tmux showing the killed command's pane dead", paneDead)
	lp.agent = Start(t, lp.env, "gt-agent", lp.args...)
	lp.tw.WaitStatus(15*time.Second, InState("furiosa", "working"))
	eventually(t, 15*time.Second, "the command started a second time", func() bool { return lines(t, marker) >= 2 })
	if n := lines(t, marker); n != 2 {
		t.Fatalf("the command was started %d times in all, want twice", n)
	}
	eventually(t, 15*time.Second, "the agent saying it started the command afresh", func() bool {
		return strings.Contains(lp.agent.Output(), "started it afresh")
	})
	if out := lp.agent.Output(); !strings.Contains(out, "started it afresh") || !strings.Contains(out, "exit_code=143") {
		t.Errorf("the agent does not say the command had exited (143) and was restarted:\n%s", out)
	}
	if lp.commandPID(t) == pid {
		t.Error("the dead command's pid is still the session's")
	}
}

// TestAgentStopsPromptly: on SIGTERM the agent says what it closes and is
// gone within a second, and hostd logs why the tunnel closed, on both
// transports.
func TestAgentStopsPromptly(t *testing.T) {
	tw := NewTown(t)
	hostd, addr := tw.Serve()
	certs := tw.Issue("gastown/furiosa", time.Hour)
	tmux := TmuxSocket(t)
	for _, transport := range []string{"quic", "tcp"} {
		t.Run(transport, func(t *testing.T) {
			agent := Start(t, AgentEnv(addr, certs), "gt-agent", "up", "--transport", transport, "--tmux-socket", tmux, "--", "sleep", "300")
			tw.WaitStatus(10*time.Second, Connected("furiosa", transport))
			start := time.Now()
			_ = agent.Cmd.Process.Signal(syscall.SIGTERM)
			if err := agent.Exited(t, 5*time.Second); err != nil {
				t.Errorf("exit status %v, want 0", err)
			}
			if took := time.Since(start); took > time.Second {
				t.Errorf("the agent took %v to stop", took)
			}
			if !strings.Contains(agent.Output(), "stopping: closing the tunnel") {
				t.Errorf("the agent does not say what it closes:\n%s", agent.Output())
			}
			tw.WaitStatus(5*time.Second, func(st api.Status) bool { return !Connected("furiosa", "")(st) })
			if !strings.Contains(hostd.Output(), `transport=`+transport+` after=`) || strings.Count(hostd.Output(), "agent shutting down") < map[string]int{"quic": 1, "tcp": 2}[transport] {
				t.Errorf("hostd does not log why the %s tunnel closed:\n%s", transport, hostd.Output())
			}
		})
	}
}

// TestAgentRevoked: an agent hostd refuses for good says it was revoked
// (not a list of guesses) and ends the polecat's session it started,
// whether the revocation closed its tunnel (on either transport) or it
// started with a revoked certificate.
func TestAgentRevoked(t *testing.T) {
	t.Parallel()
	tw := NewTown(t)
	_, addr := tw.Serve()
	for _, tc := range []struct {
		name, polecat, transport string
		before                   bool // revoked before the agent starts
		want                     string
	}{
		{"while connected over QUIC", "furiosa", "quic", false, `revoked this polecat's certificate (serial`},
		{"while connected over TCP", "nux", "tcp", false, `closed the tunnel saying "certificate revoked"`},
		{"before it started", "slit", "auto", true, "it has been revoked"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := "gastown/" + tc.polecat
			certs := tw.Issue(id, time.Hour)
			if tc.before {
				tw.Run("cert", "revoke", id)
			}
			tmux := TmuxSocket(t)
			agent := Start(t, AgentEnv(addr, certs), "gt-agent", "up", "--transport", tc.transport, "--tmux-socket", tmux, "--", "sleep", "300")
			if !tc.before {
				tw.WaitStatus(10*time.Second, Connected(tc.polecat, tc.transport))
				tw.Run("cert", "revoke", id)
			}
			if err := agent.Exited(t, 15*time.Second); err == nil {
				t.Fatal("the revoked agent exited 0")
			}
			out := agent.Output()
			for _, want := range []string{tc.want, "hostd token create " + id, "stopped the polecat's session it started"} {
				if !strings.Contains(out, want) {
					t.Errorf("the agent does not say %q:\n%s", want, out)
				}
			}
			if err := exec.Command("tmux", "-S", tmux, "has-session", "-t", "=polecat").Run(); err == nil {
				t.Error("the polecat's session still runs after its agent was refused")
			}
		})
	}
}
