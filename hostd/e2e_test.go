package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/polecat-sidecar/sidecar/hostd/control"
	"github.com/polecat-sidecar/sidecar/tunnel"
	"github.com/polecat-sidecar/sidecar/tunnel/tunneltest"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// These tests run the real binaries: hostd serve and gt-agent up, on
// loopback, with real certificates.

var binDir string

func TestMain(m *testing.M) {
	if os.Getenv(perCallEnv) != "" {
		os.Exit(perCallClient(os.Args[1:])) // the benchmarks' per-call baseline client
	}
	dir, err := os.MkdirTemp("", "sidecar-e2e-bin")
	if err != nil {
		panic(err)
	}
	for _, pkg := range []string{"hostd", "agent"} {
		out := filepath.Join(dir, map[string]string{"hostd": "hostd", "agent": "gt-agent"}[pkg])
		// Built as 'make build' builds them, so benchmarks measure what ships.
		cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", out, "github.com/polecat-sidecar/sidecar/"+pkg)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if b, err := cmd.CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "building %s: %v\n%s", pkg, err, b)
			os.Exit(2)
		}
	}
	for _, link := range []string{"gt", "bd"} {
		if err := os.Symlink("gt-agent", filepath.Join(dir, link)); err != nil {
			panic(err)
		}
	}
	binDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// proc is a running binary whose output is kept for failure reports.
type proc struct {
	cmd  *exec.Cmd
	mu   sync.Mutex
	out  bytes.Buffer
	done chan struct{}
	err  error
}

func (p *proc) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.Write(b)
}

func (p *proc) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

func start(t testing.TB, env []string, bin string, args ...string) *proc {
	t.Helper()
	p := &proc{cmd: exec.Command(filepath.Join(binDir, bin), args...), done: make(chan struct{})}
	p.cmd.Env = os.Environ()
	if bin == "gt-agent" {
		// Each agent its own relay socket and git port, unless the caller
		// says otherwise.
		p.cmd.Env = append(p.cmd.Env, "GT_AGENT_SOCKET="+filepath.Join(t.TempDir(), "agent.sock"), "GT_AGENT_GIT_LISTEN=127.0.0.1:0")
	}
	p.cmd.Env = append(p.cmd.Env, env...)
	p.cmd.Stdout, p.cmd.Stderr = p, p
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.err = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.done
		if t.Failed() {
			t.Logf("%s %s output:\n%s", bin, strings.Join(args, " "), p.output())
		}
	})
	return p
}

// exited waits up to d for the process to end and returns its error.
func (p *proc) exited(t testing.TB, d time.Duration) error {
	t.Helper()
	select {
	case <-p.done:
		return p.err
	case <-time.After(d):
		t.Fatalf("still running after %v; output:\n%s", d, p.output())
		return nil
	}
}

// town is a throw-away Gas Town root with an initialised CA.
type town struct {
	t   testing.TB
	dir string
}

func newTown(t testing.TB) *town {
	tw := &town{t: t, dir: t.TempDir()}
	tw.run("ca", "init")
	return tw
}

// run runs a hostd subcommand to completion and returns its output.
func (tw *town) run(args ...string) string {
	tw.t.Helper()
	out, err := tw.try(args...)
	if err != nil {
		tw.t.Fatalf("hostd %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

func (tw *town) try(args ...string) (string, error) {
	cmd := exec.Command(filepath.Join(binDir, "hostd"), append([]string{"--town", tw.dir}, args...)...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// serve starts hostd on a free loopback port and returns it and the port.
func (tw *town) serve(args ...string) (*proc, string) {
	tw.t.Helper()
	addr := tunneltest.FreeAddr(tw.t)
	p := start(tw.t, nil, "hostd", append([]string{"--town", tw.dir, "serve", "--listen", addr}, args...)...)
	tw.waitStatus(5*time.Second, func(control.Status) bool { return true })
	return p, addr
}

// issue writes a certificate for id and returns the directory holding it.
func (tw *town) issue(id string, ttl time.Duration) string {
	tw.t.Helper()
	out := filepath.Join(tw.dir, "certs", strings.ReplaceAll(id, "/", "-"))
	tw.run("cert", "issue", id, "--ttl", ttl.String(), "--out", out)
	return out
}

// agentEnv is the environment of an agent reaching hostd at addr with the
// credentials in dir.
func agentEnv(addr, dir string) []string {
	_, port, _ := net.SplitHostPort(addr)
	return []string{
		"GT_PROXY_URL=https://localhost:" + port,
		"GT_PROXY_CERT=" + filepath.Join(dir, "client.crt"),
		"GT_PROXY_KEY=" + filepath.Join(dir, "client.key"),
		"GT_PROXY_CA=" + filepath.Join(dir, "ca.crt"),
	}
}

// waitStatus polls the control socket until pred holds.
func (tw *town) waitStatus(d time.Duration, pred func(control.Status) bool) control.Status {
	tw.t.Helper()
	c := control.NewClient(tw.dir)
	deadline := time.Now().Add(d)
	var last control.Status
	var lastErr error
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		st, err := c.Status(ctx)
		cancel()
		if err == nil && pred(st) {
			return st
		}
		last, lastErr = st, err
		time.Sleep(20 * time.Millisecond)
	}
	tw.t.Fatalf("status condition not met within %v; last status %+v, err %v", d, last, lastErr)
	return last
}

func connected(name, transport string) func(control.Status) bool {
	return func(st control.Status) bool {
		for _, p := range st.Polecats {
			if p.Name == name && p.Connected && (transport == "" || p.Transport == transport) {
				return true
			}
		}
		return false
	}
}

// inState is true when the named polecat is in state.
func inState(name, state string) func(control.Status) bool {
	return func(st control.Status) bool {
		for _, p := range st.Polecats {
			if p.Name == name && p.State == state {
				return true
			}
		}
		return false
	}
}

func TestStatusShowsAgent(t *testing.T) {
	tw := newTown(t)
	_, addr := tw.serve()
	start(t, agentEnv(addr, tw.issue("gastown/furiosa", time.Hour)), "gt-agent", "up")
	tw.waitStatus(10*time.Second, connected("furiosa", tunnel.TransportQUIC))

	var st control.Status
	if err := json.Unmarshal([]byte(tw.run("status", "--json")), &st); err != nil {
		t.Fatal(err)
	}
	if len(st.Polecats) != 1 {
		t.Fatalf("status --json lists %d polecats, want 1", len(st.Polecats))
	}
	p := st.Polecats[0]
	if p.Rig != "gastown" || p.Name != "furiosa" || p.Transport != "quic" || !strings.HasPrefix(p.Remote, "127.0.0.1:") || p.RTTMillis <= 0 || time.Since(p.Since) > time.Minute {
		t.Errorf("status row %+v", p)
	}
	table := tw.run("status")
	for _, want := range []string{"POLECAT", "STATE", "LINK", "RTT", "BEAT", "gastown/furiosa", "quic"} {
		if !strings.Contains(table, want) {
			t.Errorf("status table lacks %q:\n%s", want, table)
		}
	}
}

func TestRevokeClosesLiveTunnel(t *testing.T) {
	tw := newTown(t)
	_, addr := tw.serve()
	agent := start(t, agentEnv(addr, tw.issue("gastown/furiosa", time.Hour)), "gt-agent", "up")
	tw.waitStatus(10*time.Second, connected("furiosa", ""))

	begin := time.Now()
	out := tw.run("cert", "revoke", "gastown/furiosa")
	if !strings.Contains(out, "closed 1 live tunnel") {
		t.Errorf("revoke output: %s", out)
	}
	tw.waitStatus(time.Second, func(st control.Status) bool { return !connected("furiosa", "")(st) })
	if d := time.Since(begin); d > time.Second {
		t.Errorf("tunnel closed %v after revoke, want within 1s", d)
	}
	// The agent cannot come back: its certificate is refused, and it says so.
	if err := agent.exited(t, 10*time.Second); err == nil {
		t.Error("agent exited 0 after revocation")
	}
	if !strings.Contains(agent.output(), "refused") {
		t.Errorf("agent did not say it was refused:\n%s", agent.output())
	}
	if !strings.Contains(tw.run("cert", "list"), "revoked") {
		t.Error("cert list does not show the revocation")
	}
	tw.waitStatus(time.Second, inState("furiosa", "revoked"))
}

func TestRevocationSurvivesRestart(t *testing.T) {
	tw := newTown(t)
	certs := tw.issue("gastown/nux", time.Hour)
	out := tw.run("cert", "revoke", "gastown/nux")
	if !strings.Contains(out, "not running") {
		t.Errorf("revoke with no daemon should say it applies at start: %s", out)
	}
	_, addr := tw.serve()
	agent := start(t, agentEnv(addr, certs), "gt-agent", "up")
	if err := agent.exited(t, 10*time.Second); err == nil || !strings.Contains(agent.output(), "refused") {
		t.Fatalf("revoked agent after hostd start: err %v, output:\n%s", err, agent.output())
	}
}

func TestAgentReconnectsAfterHostdRestart(t *testing.T) {
	tw := newTown(t)
	hostd, addr := tw.serve()
	env := agentEnv(addr, tw.issue("gastown/furiosa", time.Hour))
	start(t, env, "gt-agent", "up")
	first := tw.waitStatus(10*time.Second, connected("furiosa", ""))

	_ = hostd.cmd.Process.Signal(syscall.SIGKILL)
	_ = hostd.exited(t, 5*time.Second)
	time.Sleep(time.Second) // the agent backs off meanwhile: about 100ms, 200ms, 400ms, 800ms
	restarted := time.Now()
	start(t, nil, "hostd", "--town", tw.dir, "serve", "--listen", addr)
	st := tw.waitStatus(15*time.Second, connected("furiosa", ""))
	back := time.Since(restarted)
	// An idle agent notices the dead QUIC connection after the 5s idle
	// timeout (4s after the restart here), then redials at once; the
	// bound is that plus the largest backoff (10s).
	if back > 10*time.Second {
		t.Errorf("agent back %v after hostd restarted, want within the backoff bound", back)
	}
	if !st.Polecats[0].Since.After(first.Polecats[0].Since) {
		t.Error("status shows the old session")
	}
	t.Logf("agent back %v after hostd restart", back.Round(time.Millisecond))
}

func TestFallbackToTCPAndBackToQUIC(t *testing.T) {
	tw := newTown(t)
	_, addr := tw.serve()
	relay := tunneltest.NewRelay(t, addr)
	relay.BlockUDP(true)
	env := agentEnv(relay.Addr, tw.issue("gastown/furiosa", time.Hour))
	start(t, env, "gt-agent", "up", "--quic-probe", "500ms")
	began := time.Now()
	tw.waitStatus(10*time.Second, connected("furiosa", tunnel.TransportTCP))
	t.Logf("on TCP after %v", time.Since(began).Round(time.Millisecond))

	relay.BlockUDP(false)
	began = time.Now()
	tw.waitStatus(10*time.Second, connected("furiosa", tunnel.TransportQUIC))
	t.Logf("back on QUIC after %v", time.Since(began).Round(time.Millisecond))
}

func TestJoinToken(t *testing.T) {
	tw := newTown(t)
	_, addr := tw.serve()
	_, port, _ := net.SplitHostPort(addr)
	token := strings.TrimSpace(tw.run("token", "create", "gastown/slit"))
	joinAgent := func(token, identity string) *proc {
		state := t.TempDir()
		return start(t, []string{"GT_PROXY_URL=https://localhost:" + port}, "gt-agent", "up", "--state-dir", state, "--join", token, "--identity", identity)
	}
	joinAgent(token, "gastown/slit")
	tw.waitStatus(10*time.Second, connected("slit", ""))

	again := joinAgent(token, "gastown/slit")
	if err := again.exited(t, 10*time.Second); err == nil || !strings.Contains(again.output(), "already used") {
		t.Errorf("second use of a token: %v\n%s", err, again.output())
	}

	other := strings.TrimSpace(tw.run("token", "create", "gastown/slit"))
	wrong := joinAgent(other, "gastown/nux")
	if err := wrong.exited(t, 10*time.Second); err == nil || !strings.Contains(wrong.output(), "not gastown/nux") {
		t.Errorf("token for another name: %v\n%s", err, wrong.output())
	}

	short := strings.TrimSpace(tw.run("token", "create", "gastown/ace", "--ttl", "1s"))
	time.Sleep(1200 * time.Millisecond)
	late := joinAgent(short, "gastown/ace")
	if err := late.exited(t, 10*time.Second); err == nil || !strings.Contains(late.output(), "expired") {
		t.Errorf("expired token: %v\n%s", err, late.output())
	}

	forged := strings.TrimSpace(newTown(t).run("token", "create", "gastown/ace"))
	bad := joinAgent(forged, "gastown/ace")
	if err := bad.exited(t, 10*time.Second); err == nil || !strings.Contains(bad.output(), "fingerprint") {
		t.Errorf("token from another CA: %v\n%s", err, bad.output())
	}
}

func TestRenewalKeepsSession(t *testing.T) {
	tw := newTown(t)
	_, addr := tw.serve("--cert-ttl", "1h")
	certs := tw.issue("gastown/furiosa", 6*time.Second)
	env := agentEnv(addr, certs)
	start(t, env, "gt-agent", "up")
	first := tw.waitStatus(10*time.Second, connected("furiosa", ""))
	p0 := first.Polecats[0]
	// Renewal is due two thirds into the lifetime (~4s); the original
	// certificate expires at ~6s. Wait past that.
	time.Sleep(time.Until(p0.CertExpires.Add(time.Second)))
	st := tw.waitStatus(5*time.Second, connected("furiosa", ""))
	p1 := st.Polecats[0]
	if p1.CertSerial == p0.CertSerial {
		t.Fatal("certificate was not renewed")
	}
	if !p1.Since.Equal(p0.Since) {
		t.Errorf("session replaced during renewal: connected since %v, then %v", p0.Since, p1.Since)
	}
	if time.Until(p1.CertExpires) < 50*time.Minute {
		t.Errorf("renewed certificate expires %v, want about an hour from now", p1.CertExpires)
	}
	crt, _ := os.ReadFile(filepath.Join(certs, "client.crt"))
	if leaf, err := parseLeaf(crt); err != nil || leaf.SerialNumber.Text(16) != p1.CertSerial {
		t.Errorf("renewed certificate not saved to client.crt: %v", err)
	}
	if !strings.Contains(tw.run("cert", "list"), "renew") {
		t.Error("cert list does not show the renewal")
	}
}

func TestAgentErrors(t *testing.T) {
	tw := newTown(t)
	_, addr := tw.serve()
	dir := tw.issue("gastown/furiosa", time.Hour)
	good := agentEnv(addr, dir)

	foreign := tunneltest.NewCA(t)
	writePEM := func(name string, der []byte, typ string) string {
		p := filepath.Join(t.TempDir(), name)
		_ = os.WriteFile(p, pemEncode(typ, der), 0o600)
		return p
	}
	foreignCA := writePEM("ca.crt", foreign.Cert.Raw, "CERTIFICATE")
	expired := foreign.Client(t, wire.Identity{Rig: "gastown", Name: "furiosa"}, tunneltest.Validity(time.Now().Add(-2*time.Hour), time.Now().Add(-time.Hour)))
	expiredCert := writePEM("client.crt", expired.Certificate[0], "CERTIFICATE")
	expiredKey := writePEM("client.key", mustPKCS8(t, expired.PrivateKey), "PRIVATE KEY")
	// A certificate that is fine locally, but hostd's is from another CA.
	stranger := foreign.Client(t, wire.Identity{Rig: "gastown", Name: "furiosa"})
	strangerCert := writePEM("client.crt", stranger.Certificate[0], "CERTIFICATE")
	strangerKey := writePEM("client.key", mustPKCS8(t, stranger.PrivateKey), "PRIVATE KEY")

	cases := []struct {
		name string
		env  []string
		args []string
		want string
	}{
		{"no url", []string{"GT_PROXY_URL="}, nil, "GT_PROXY_URL"},
		{"bad url", []string{"GT_PROXY_URL=http://localhost:1"}, nil, "want https://"},
		{"missing cert", []string{"GT_PROXY_CERT=/nonexistent/client.crt"}, nil, "does not exist"},
		{"unreadable key", []string{"GT_PROXY_KEY=" + dir}, nil, "key"},
		{"cert from another CA", []string{"GT_PROXY_CA=" + foreignCA}, nil, "not a client certificate from CA"},
		{"expired", []string{"GT_PROXY_CERT=" + expiredCert, "GT_PROXY_KEY=" + expiredKey, "GT_PROXY_CA=" + foreignCA}, nil, "expired"},
		{"key of another certificate", []string{"GT_PROXY_KEY=" + expiredKey}, nil, "private key does not match"},
		{"hostd not from our CA", []string{"GT_PROXY_CERT=" + strangerCert, "GT_PROXY_KEY=" + strangerKey, "GT_PROXY_CA=" + foreignCA}, nil, "refused the tunnel handshake"},
		{"unreachable", []string{"GT_PROXY_URL=https://localhost:1"}, []string{"--connect-timeout", "1s"}, "cannot reach hostd"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := start(t, append(append([]string{}, good...), c.env...), "gt-agent", append([]string{"up"}, c.args...)...)
			err := p.exited(t, 15*time.Second)
			if err == nil {
				t.Fatalf("exit 0; output:\n%s", p.output())
			}
			if !strings.Contains(p.output(), c.want) {
				t.Errorf("output lacks %q:\n%s", c.want, p.output())
			}
		})
	}
}
