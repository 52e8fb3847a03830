package e2e

import (
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/polecat-sidecar/sidecar/hostd/api"

	"github.com/polecat-sidecar/sidecar/tunnel"
	"github.com/polecat-sidecar/sidecar/tunnel/tunneltest"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// These tests run the real binaries: hostd serve and gt-agent up, on
// loopback, with real certificates.

func TestStatusShowsAgent(t *testing.T) {
	tw := NewTown(t)
	_, addr := tw.Serve()
	Start(t, AgentEnv(addr, tw.Issue("gastown/furiosa", time.Hour)), "gt-agent", "up")
	tw.WaitStatus(10*time.Second, Connected("furiosa", tunnel.TransportQUIC))

	var st api.Status
	if err := json.Unmarshal([]byte(tw.Run("status", "--json")), &st); err != nil {
		t.Fatal(err)
	}
	if len(st.Polecats) != 1 {
		t.Fatalf("status --json lists %d polecats, want 1", len(st.Polecats))
	}
	p := st.Polecats[0]
	if p.Rig != "gastown" || p.Name != "furiosa" || p.Transport != "quic" || !strings.HasPrefix(p.Remote, "127.0.0.1:") || p.RTTMillis <= 0 || time.Since(p.Since) > time.Minute {
		t.Errorf("status row %+v", p)
	}
	table := tw.Run("status")
	for _, want := range []string{"POLECAT", "STATE", "LINK", "RTT", "BEAT", "gastown/furiosa", "quic"} {
		if !strings.Contains(table, want) {
			t.Errorf("status table lacks %q:\n%s", want, table)
		}
	}
}

func TestRevokeClosesLiveTunnel(t *testing.T) {
	tw := NewTown(t)
	_, addr := tw.Serve()
	agent := Start(t, AgentEnv(addr, tw.Issue("gastown/furiosa", time.Hour)), "gt-agent", "up")
	tw.WaitStatus(10*time.Second, Connected("furiosa", ""))

	begin := time.Now()
	out := tw.Run("cert", "revoke", "gastown/furiosa")
	if !strings.Contains(out, "closed 1 live tunnel") {
		t.Errorf("revoke output: %s", out)
	}
	tw.WaitStatus(time.Second, func(st api.Status) bool { return !Connected("furiosa", "")(st) })
	if d := time.Since(begin); d > time.Second {
		t.Errorf("tunnel closed %v after revoke, want within 1s", d)
	}
	// The agent cannot come back: its certificate is refused, and it says
	// it was revoked.
	if err := agent.Exited(t, 10*time.Second); err == nil {
		t.Error("agent exited 0 after revocation")
	}
	if !strings.Contains(agent.Output(), "revoked this polecat's certificate") {
		t.Errorf("agent did not say it was revoked:\n%s", agent.Output())
	}
	if !strings.Contains(tw.Run("cert", "list"), "revoked") {
		t.Error("cert list does not show the revocation")
	}
	tw.WaitStatus(time.Second, InState("furiosa", "revoked"))
}

func TestRevocationSurvivesRestart(t *testing.T) {
	t.Parallel()
	tw := NewTown(t)
	certs := tw.Issue("gastown/nux", time.Hour)
	out := tw.Run("cert", "revoke", "gastown/nux")
	if !strings.Contains(out, "not running") {
		t.Errorf("revoke with no daemon should say it applies at start: %s", out)
	}
	_, addr := tw.Serve()
	agent := Start(t, AgentEnv(addr, certs), "gt-agent", "up")
	if err := agent.Exited(t, 10*time.Second); err == nil || !strings.Contains(agent.Output(), "refused") {
		t.Fatalf("revoked agent after hostd start: err %v, output:\n%s", err, agent.Output())
	}
}

func TestAgentReconnectsAfterHostdRestart(t *testing.T) {
	t.Parallel()
	tw := NewTown(t)
	hostd, addr := tw.Serve()
	env := AgentEnv(addr, tw.Issue("gastown/furiosa", time.Hour))
	Start(t, env, "gt-agent", "up")
	first := tw.WaitStatus(10*time.Second, Connected("furiosa", ""))

	_ = hostd.Cmd.Process.Signal(syscall.SIGKILL)
	_ = hostd.Exited(t, 5*time.Second)
	time.Sleep(time.Second) // the agent backs off meanwhile: about 100ms, 200ms, 400ms, 800ms
	restarted := time.Now()
	Start(t, nil, "hostd", "--town", tw.Dir, "serve", "--listen", addr)
	st := tw.WaitStatus(15*time.Second, Connected("furiosa", ""))
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
	t.Parallel()
	tw := NewTown(t)
	_, addr := tw.Serve()
	relay := tunneltest.NewRelay(t, addr)
	relay.BlockUDP(true)
	env := AgentEnv(relay.Addr, tw.Issue("gastown/furiosa", time.Hour))
	Start(t, env, "gt-agent", "up", "--quic-probe", "500ms")
	began := time.Now()
	tw.WaitStatus(10*time.Second, Connected("furiosa", tunnel.TransportTCP))
	t.Logf("on TCP after %v", time.Since(began).Round(time.Millisecond))

	relay.BlockUDP(false)
	began = time.Now()
	tw.WaitStatus(10*time.Second, Connected("furiosa", tunnel.TransportQUIC))
	t.Logf("back on QUIC after %v", time.Since(began).Round(time.Millisecond))
	// The TCP tunnel it left closes once its streams are done: the beats
	// moved to QUIC with it (the supervisor drains a replaced session for
	// up to 5 minutes; the soak saw one kept that long by its beats).
	for deadline := time.Now().Add(15 * time.Second); relay.OpenTCP() > 0; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the TCP tunnel is still open 15 s after the return to QUIC (%d connections)", relay.OpenTCP())
		}
	}
	t.Logf("the TCP tunnel closed %v after the return to QUIC", time.Since(began).Round(time.Millisecond))
}

func TestJoinToken(t *testing.T) {
	t.Parallel()
	tw := NewTown(t)
	_, addr := tw.Serve()
	_, port, _ := net.SplitHostPort(addr)
	token := strings.TrimSpace(tw.Run("token", "create", "gastown/slit"))
	joinAgent := func(token, identity string) *Proc {
		state := t.TempDir()
		return Start(t, []string{"GT_PROXY_URL=https://localhost:" + port}, "gt-agent", "up", "--state-dir", state, "--join", token, "--identity", identity)
	}
	joinAgent(token, "gastown/slit")
	tw.WaitStatus(10*time.Second, Connected("slit", ""))

	again := joinAgent(token, "gastown/slit")
	if err := again.Exited(t, 10*time.Second); err == nil || !strings.Contains(again.Output(), "already used") {
		t.Errorf("second use of a token: %v\n%s", err, again.Output())
	}

	other := strings.TrimSpace(tw.Run("token", "create", "gastown/slit"))
	wrong := joinAgent(other, "gastown/nux")
	if err := wrong.Exited(t, 10*time.Second); err == nil || !strings.Contains(wrong.Output(), "not gastown/nux") {
		t.Errorf("token for another name: %v\n%s", err, wrong.Output())
	}

	short := strings.TrimSpace(tw.Run("token", "create", "gastown/ace", "--ttl", "1s"))
	time.Sleep(1200 * time.Millisecond)
	late := joinAgent(short, "gastown/ace")
	if err := late.Exited(t, 10*time.Second); err == nil || !strings.Contains(late.Output(), "expired") {
		t.Errorf("expired token: %v\n%s", err, late.Output())
	}

	// From a file, as a mounted secret gives it; a missing file says so.
	file := filepath.Join(t.TempDir(), "token")
	_ = os.WriteFile(file, []byte(tw.Run("token", "create", "gastown/rictus")), 0o400)
	Start(t, []string{"GT_PROXY_URL=https://localhost:" + port, "GT_AGENT_JOIN_FILE=" + file}, "gt-agent", "up", "--state-dir", t.TempDir(), "--identity", "gastown/rictus")
	tw.WaitStatus(10*time.Second, Connected("rictus", ""))
	missing := Start(t, []string{"GT_PROXY_URL=https://localhost:" + port}, "gt-agent", "up", "--state-dir", t.TempDir(), "--join-file", file+".missing", "--identity", "gastown/rictus")
	if err := missing.Exited(t, 10*time.Second); err == nil || !strings.Contains(missing.Output(), "join token file cannot be read") {
		t.Errorf("missing token file: %v\n%s", err, missing.Output())
	}

	forged := strings.TrimSpace(NewTown(t).Run("token", "create", "gastown/ace"))
	bad := joinAgent(forged, "gastown/ace")
	if err := bad.Exited(t, 10*time.Second); err == nil || !strings.Contains(bad.Output(), "fingerprint") {
		t.Errorf("token from another CA: %v\n%s", err, bad.Output())
	}
}

func TestRenewalKeepsSession(t *testing.T) {
	t.Parallel()
	tw := NewTown(t)
	_, addr := tw.Serve("--cert-ttl", "1h")
	certs := tw.Issue("gastown/furiosa", 12*time.Second)
	env := AgentEnv(addr, certs)
	Start(t, env, "gt-agent", "up")
	first := tw.WaitStatus(10*time.Second, Connected("furiosa", ""))
	p0 := first.Polecats[0]
	// Renewal is due two thirds into the lifetime (~8s); the original
	// certificate expires at ~12s. Wait past that.
	time.Sleep(time.Until(p0.CertExpires.Add(time.Second)))
	st := tw.WaitStatus(5*time.Second, Connected("furiosa", ""))
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
	if !strings.Contains(tw.Run("cert", "list"), "renew") {
		t.Error("cert list does not show the renewal")
	}
}

func TestAgentErrors(t *testing.T) {
	t.Parallel()
	tw := NewTown(t)
	_, addr := tw.Serve()
	dir := tw.Issue("gastown/furiosa", time.Hour)
	good := AgentEnv(addr, dir)

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
		{"hostd not from our CA", []string{"GT_PROXY_CERT=" + strangerCert, "GT_PROXY_KEY=" + strangerKey, "GT_PROXY_CA=" + foreignCA}, nil, "is not the hostd this agent's CA (GT_PROXY_CA) vouches for"},
		{"unreachable", []string{"GT_PROXY_URL=https://localhost:1"}, []string{"--connect-timeout", "1s"}, "cannot reach hostd"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			p := Start(t, append(append([]string{}, good...), c.env...), "gt-agent", append([]string{"up"}, c.args...)...)
			err := p.Exited(t, 15*time.Second)
			if err == nil {
				t.Fatalf("exit 0; output:\n%s", p.Output())
			}
			if !strings.Contains(p.Output(), c.want) {
				t.Errorf("output lacks %q:\n%s", c.want, p.Output())
			}
		})
	}
}

// TestJoinWaitsForHostd: an agent joining before hostd listens (a
// container started with it, or right after 'hostd serve &') retries
// until hostd is there, within --connect-timeout, and then says it
// could not reach hostd.
func TestJoinWaitsForHostd(t *testing.T) {
	t.Parallel()
	tw := NewTown(t)
	addr := tunneltest.FreeAddr(t)
	_, port, _ := net.SplitHostPort(addr)
	token := strings.TrimSpace(tw.Run("token", "create", "gastown/slit"))
	env := []string{"GT_PROXY_URL=https://localhost:" + port}
	agent := Start(t, env, "gt-agent", "up", "--state-dir", t.TempDir(), "--join", token, "--identity", "gastown/slit")
	eventually(t, 15*time.Second, "the agent saying it waits for hostd", func() bool {
		return strings.Contains(agent.Output(), "hostd not reachable yet; retrying")
	})
	tw.ServeOn(addr)
	tw.WaitStatus(10*time.Second, Connected("slit", ""))

	late := strings.TrimSpace(tw.Run("token", "create", "gastown/nux"))
	none := Start(t, []string{"GT_PROXY_URL=https://localhost:1"}, "gt-agent", "up", "--state-dir", t.TempDir(), "--join", late, "--identity", "gastown/nux", "--connect-timeout", "1s")
	if err := none.Exited(t, 10*time.Second); err == nil || !strings.Contains(none.Output(), "cannot reach hostd at localhost:1 after 1s") {
		t.Errorf("joining no hostd: %v\n%s", err, none.Output())
	}
}
