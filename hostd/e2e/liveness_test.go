package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/polecat-sidecar/sidecar/hostd/api"

	"github.com/polecat-sidecar/sidecar/heartbeat"
	"github.com/polecat-sidecar/sidecar/tunnel"
	"github.com/polecat-sidecar/sidecar/tunnel/tunneltest"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// The liveness tests beat every 500ms; hostd is told so.
const beatEvery = 500 * time.Millisecond

// livePolecat is hostd plus one agent supervising a tmux session.
type livePolecat struct {
	tw    *Town
	hostd *Proc
	agent *Proc
	tmux  string
	relay *tunneltest.Relay
	addr  string
	certs string
	// env and args start the agent, again after a restart.
	env, args []string
}

func newLivePolecat(t *testing.T, serve []string, viaRelay bool, command ...string) *livePolecat {
	lp := &livePolecat{tw: NewTown(t), tmux: TmuxSocket(t)}
	lp.hostd, lp.addr = lp.tw.Serve(append([]string{"--beat-interval", beatEvery.String()}, serve...)...)
	addr := lp.addr
	if viaRelay {
		lp.relay = tunneltest.NewRelay(t, addr)
		addr = lp.relay.Addr
	}
	lp.certs = lp.tw.Issue("gastown/furiosa", time.Hour)
	if len(command) == 0 {
		command = []string{"sh", "-c", "echo working; sleep 300"}
	}
	lp.env = AgentEnv(addr, lp.certs)
	lp.args = append([]string{"up", "--tmux-socket", lp.tmux, "--beat-interval", beatEvery.String(), "--"}, command...)
	lp.agent = Start(t, lp.env, "gt-agent", lp.args...)
	lp.tw.WaitStatus(10*time.Second, InState("furiosa", "working"))
	return lp
}

// commandPID is the polecat's command: the child of the session's first
// process (gt-agent session-run).
func (lp *livePolecat) commandPID(t *testing.T) int {
	out, err := exec.Command("tmux", "-S", lp.tmux, "display-message", "-p", "-t", "=polecat:", "#{pane_pid}").Output()
	if err != nil {
		t.Fatal(err)
	}
	child, err := exec.Command("pgrep", "-P", strings.TrimSpace(string(out))).Output()
	if err != nil {
		t.Fatalf("no command under the session's wrapper: %v", err)
	}
	pid, _ := strconv.Atoi(strings.Fields(string(child))[0])
	return pid
}

// until waits for the polecat's state and returns how long it took.
func (lp *livePolecat) until(t *testing.T, state string, d time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	lp.tw.WaitStatus(d, InState("furiosa", state))
	return time.Since(start)
}

func TestLivenessSessionKilled(t *testing.T) {
	lp := newLivePolecat(t, nil, false)
	_ = syscall.Kill(lp.commandPID(t), syscall.SIGKILL)
	took := lp.until(t, "dead", 15*time.Second)
	t.Logf("dead %v after the session's process was killed (beats every %v)", took, beatEvery)
	// The code may come one beat later than the death (tmux reaps the
	// process a moment after the pane dies); SIGKILL is 128+9.
	var d api.PolecatDetail
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		d, _ = lp.tw.Client().Polecat(context.Background(), api.Identity{Rig: "gastown", Name: "furiosa"})
		if strings.Contains(d.Reason, "code") {
			break
		}
	}
	if d.Reason != "session exited with code 137" {
		t.Fatalf("reason %q, want the SIGKILL exit code", d.Reason)
	}
	out, err := lp.tw.Try("alive", "gastown/furiosa")
	if err == nil || !strings.Contains(out, "dead") {
		t.Errorf("hostd alive on a dead polecat: %v %s", err, out)
	}
	// The agent keeps running and reporting.
	if lp.agent.Cmd.ProcessState != nil {
		t.Fatal("agent exited with its session")
	}
	lp.tw.WaitStatus(10*time.Second, Connected("furiosa", ""))
}

func TestLivenessAgentFrozen(t *testing.T) {
	lp := newLivePolecat(t, []string{"--idle-timeout", "3s"}, false)
	if out, err := lp.tw.Try("alive", "gastown/furiosa"); err != nil {
		t.Fatalf("alive on a working polecat: %v %s", err, out)
	}
	_ = lp.agent.Cmd.Process.Signal(syscall.SIGSTOP)
	took := lp.until(t, "stale", 15*time.Second)
	t.Logf("stale %v after SIGSTOP", took)
	took = lp.until(t, "disconnected", 15*time.Second)
	t.Logf("disconnected %v later (hostd's idle timeout)", took)
	_ = lp.agent.Cmd.Process.Signal(syscall.SIGCONT)
	took = lp.until(t, "working", 15*time.Second)
	t.Logf("working again %v after SIGCONT", took)
}

func TestLivenessTunnelCut(t *testing.T) {
	t.Parallel()
	lp := newLivePolecat(t, []string{"--idle-timeout", "2s", "--grace", "3s"}, true)
	lp.relay.Cut(true)
	lp.until(t, "disconnected", 15*time.Second)
	took := lp.until(t, "dead", 15*time.Second)
	t.Logf("dead %v after disconnecting (grace 3s)", took)
	lp.relay.Cut(false)
	took = lp.until(t, "working", 20*time.Second)
	t.Logf("working %v after the cut ended", took)
}

func TestLivenessRestoredAfterRestart(t *testing.T) {
	t.Parallel()
	lp := newLivePolecat(t, nil, false)
	_ = lp.agent.Cmd.Process.Signal(syscall.SIGSTOP) // the agent cannot come back yet
	_ = lp.hostd.Cmd.Process.Signal(syscall.SIGTERM)
	_ = lp.hostd.Exited(t, 5*time.Second)
	lp.hostd = Start(t, nil, "hostd", "--town", lp.tw.Dir, "serve", "--listen", lp.addr, "--beat-interval", beatEvery.String())
	st := lp.tw.WaitStatus(5*time.Second, InState("furiosa", "working"))
	if p := st.Polecats[0]; !p.Restored || p.Connected || len(p.Command) == 0 {
		t.Errorf("after restart: %+v; want the last known state, marked restored", p)
	}
	if table := lp.tw.Run("status"); !strings.Contains(table, "working?") {
		t.Errorf("status does not mark the restored state:\n%s", table)
	}
	// alive cannot tell yet (exit status 3), and waits for the agent.
	if out, err := lp.tw.Try("alive", "gastown/furiosa"); exitCode(err) != 3 || !strings.Contains(out, "working?") {
		t.Errorf("alive on a restored polecat: %v %s; want exit status 3", err, out)
	}
	_ = lp.agent.Cmd.Process.Signal(syscall.SIGCONT)
	if out, err := lp.tw.Try("alive", "gastown/furiosa", "--wait", "15s"); err != nil || !strings.Contains(out, "gastown/furiosa: working (") {
		t.Errorf("alive --wait 15s while the agent comes back: %v %s; want exit status 0", err, out)
	}
	lp.tw.WaitStatus(15*time.Second, func(st api.Status) bool {
		return Connected("furiosa", "")(st) && st.Polecats[0].State == "working" && !st.Polecats[0].Restored
	})
}

// exitCode is the exit status of a command that ended with err.
func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

func TestLivenessBadBeats(t *testing.T) {
	tw := NewTown(t)
	hostd, addr := tw.Serve("--beat-interval", beatEvery.String())
	certs := tw.Issue("gastown/furiosa", time.Hour)
	cert, err := tls.LoadX509KeyPair(filepath.Join(certs, "client.crt"), filepath.Join(certs, "client.key"))
	if err != nil {
		t.Fatal(err)
	}
	caPEM, _ := os.ReadFile(filepath.Join(certs, "ca.crt"))
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	sess, err := tunnel.Dial(context.Background(), addr, tunnel.ClientConfig{
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &cert, nil },
		RootCAs:              pool, ServerName: "localhost"})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	// send writes line on a stream of its own and waits for hostd to
	// end it: a refusal once it has judged the line, EOF after a beat.
	send := func(line string) {
		st, err := sess.OpenStream(context.Background(), wire.KindHeartbeat, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		_, _ = st.Write([]byte(line))
		_ = st.CloseWrite()
		_ = st.SetReadDeadline(time.Now().Add(15 * time.Second))
		if _, err := io.ReadAll(st); errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("hostd did not end the heartbeat stream within 15 s of %.40q", line)
		}
	}
	for _, bad := range []string{
		"not json\n",
		`{"seq":1,"interval":5,"session":{"state":"running"},"alive":true}` + "\n",
		`{"seq":1,"interval":5,"session":{"state":"zombie"}}` + "\n",
		`{"seq":1,"interval":5,"session":{"state":"running","name":"` + strings.Repeat("x", 20000) + `"}}` + "\n",
	} {
		send(bad)
	}
	st := tw.WaitStatus(10*time.Second, func(st api.Status) bool { return len(st.Polecats) == 1 })
	if p := st.Polecats[0]; (p.State != "starting" && p.State != "stale") || !p.LastBeat.IsZero() {
		t.Fatalf("after bad beats: %s, last beat %v; want starting or stale with no beat counted", p.State, p.LastBeat)
	}
	tw.WaitStatus(5*time.Second, InState("furiosa", "stale")) // no beat counted, ever
	if n := strings.Count(hostd.Output(), "refused heartbeat"); n != 4 {
		t.Errorf("%d refusals logged, want 4:\n%s", n, hostd.Output())
	}
	var good strings.Builder
	_ = heartbeat.NewWriter(&good).Write(&heartbeat.Beat{Seq: 1, Interval: 0.5, Session: heartbeat.Session{Name: "p", State: heartbeat.SessionRunning}})
	send(good.String())
	tw.WaitStatus(10*time.Second, InState("furiosa", "working"))
}

func TestMetrics(t *testing.T) {
	addr := tunneltest.FreeAddr(t)
	lp := newLivePolecat(t, []string{"--metrics-listen", addr}, false)
	var body string
	for range 50 {
		resp, err := http.Get("http://" + addr + "/metrics")
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			body = string(b)
			if strings.Contains(body, `sidecar_heartbeats_total{result="accepted"}`) {
				break
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, want := range []string{
		`sidecar_polecat_state{polecat="furiosa",rig="gastown",state="working"} 1`,
		`sidecar_polecat_state{polecat="furiosa",rig="gastown",state="dead"} 0`,
		`sidecar_tunnels{transport="quic"} 1`,
		`sidecar_streams_total{kind="heartbeat"}`,
		`sidecar_polecat_beat_age_seconds{polecat="furiosa",rig="gastown"}`,
		`sidecar_polecat_rtt_seconds{polecat="furiosa",rig="gastown"}`,
		`sidecar_polecat_rss_bytes{polecat="furiosa",rig="gastown"}`,
		`sidecar_upstream_pending 0`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	_ = lp
}

func TestLivenessWatchProcess(t *testing.T) {
	tw := NewTown(t)
	_, addr := tw.Serve("--beat-interval", beatEvery.String())
	// A process with a name nothing else on the machine has.
	bin := filepath.Join(t.TempDir(), "pcwatched")
	sleep, _ := exec.LookPath("sleep")
	data, _ := os.ReadFile(sleep)
	_ = os.WriteFile(bin, data, 0o755)
	Proc := exec.Command(bin, "300")
	if err := Proc.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = Proc.Process.Kill(); _ = Proc.Wait() })
	Start(t, AgentEnv(addr, tw.Issue("gastown/furiosa", time.Hour)), "gt-agent", "up", "--watch-process", "pcwatched", "--beat-interval", beatEvery.String())
	st := tw.WaitStatus(10*time.Second, InState("furiosa", "working"))
	if p := st.Polecats[0]; p.SessionState != "running" || p.Processes != 1 || p.IdleSeconds != -1 {
		t.Errorf("watched process: %+v; want running, 1 process, idle unknown", p)
	}
	_ = Proc.Process.Kill()
	_ = Proc.Wait()
	tw.WaitStatus(2*beatEvery+300*time.Millisecond, InState("furiosa", "dead"))
}

// TestStatusSaysCommandNotFound: a polecat whose command is not installed
// in its container (the image without Claude Code) is dead, and hostd
// status, its agent's log and the status's JSON say "command not found"
// with the command's name, not only "exit code 127".
func TestStatusSaysCommandNotFound(t *testing.T) {
	t.Parallel()
	tw := NewTown(t)
	_, addr := tw.Serve("--beat-interval", beatEvery.String())
	certs := tw.Issue("gastown/furiosa", time.Hour)
	agent := Start(t, AgentEnv(addr, certs), "gt-agent", "up", "--tmux-socket", TmuxSocket(t), "--beat-interval", beatEvery.String(),
		"--", "no-such-claude", "--dangerously-skip-permissions")
	const want = "command not found: no-such-claude"
	// Dead at once; the exit code and why follow within a beat or two
	// (the first beat may see the pane dead before its status is written).
	tw.WaitStatus(10*time.Second, func(st api.Status) bool {
		return InState("furiosa", "dead")(st) && strings.Contains(st.Polecats[0].Reason, want)
	})
	if out := tw.Run("status", "gastown/furiosa"); !strings.Contains(out, "session exited with code 127: gt-agent: "+want) {
		t.Errorf("hostd status does not say %q:\n%s", want, out)
	}
	if out := tw.Run("status", "gastown/furiosa", "--json"); !strings.Contains(out, `"exit_reason"`) || !strings.Contains(out, want) {
		t.Errorf("hostd status --json has no exit_reason %q:\n%s", want, out)
	}
	if !strings.Contains(agent.Output(), want) {
		t.Errorf("the agent's log does not say %q:\n%s", want, agent.Output())
	}
}
