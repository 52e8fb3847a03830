package e2e

import (
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/polecat-sidecar/sidecar/tunnel/tunneltest"
)

// scrape returns hostd's /metrics once it contains every wanted line
// prefix, or the last body after d.
func scrape(t *testing.T, addr string, d time.Duration, want []string) string {
	t.Helper()
	var body string
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		resp, err := http.Get("http://" + addr + "/metrics")
		if err != nil {
			continue
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		body = string(b)
		missing := false
		for _, w := range want {
			missing = missing || !strings.Contains(body, w)
		}
		if !missing {
			return body
		}
	}
	for _, w := range want {
		if !strings.Contains(body, w) {
			t.Errorf("metrics lack %s", w)
		}
	}
	return body
}

// TestServiceMetrics: each service counts what it did, with bounded
// labels: relayed commands by command and exit class, git requests by
// service and outcome with their bytes, tunnels accepted by transport,
// renewals and refused handshakes; Go's profiles are served beside them.
func TestServiceMetrics(t *testing.T) {
	metrics := tunneltest.FreeAddr(t)
	fake, err := filepath.Abs("testdata/fake-gt.sh")
	if err != nil {
		t.Fatal(err)
	}
	g := NewGitTown(t, "--metrics-listen", metrics, "--relay-gt", fake, "--relay-bd", fake, "--cert-ttl", "1h")
	socket := filepath.Join(t.TempDir(), "agent.sock")
	url := g.Polecat(t, "furiosa", "--socket", socket)
	g.Git(t, t.TempDir(), "clone", "-q", url, "work")

	gt := func(args ...string) {
		cmd := exec.Command(filepath.Join(BinDir, "gt"), args...)
		cmd.Env = append(cmd.Environ(), "GT_AGENT_SOCKET="+socket)
		_ = cmd.Run()
	}
	gt("nudge", "exit", "3")
	gt("nudge", "pwd")
	gt("rm", "-rf", "/")

	// A revoked certificate's reconnection is refused in the handshake.
	certs := g.Issue("gastown/nux", time.Hour)
	g.Run("cert", "revoke", "gastown/nux")
	nux := Start(t, AgentEnv(g.Addr, certs), "gt-agent", "up", "--git-listen", "")
	_ = nux.Exited(t, 15*time.Second)

	scrape(t, metrics, 10*time.Second, []string{
		`sidecar_relay_commands_total{command="gt",exit="ok"} 1`,
		`sidecar_relay_commands_total{command="gt",exit="failed"} 1`,
		`sidecar_relay_commands_total{command="gt",exit="refused"} 1`,
		`sidecar_relay_command_duration_seconds_count{command="gt"} 2`,
		`sidecar_git_requests_total{outcome="ok",service="upload-pack"}`,
		`sidecar_git_bytes_total{direction="out",service="upload-pack"}`,
		`sidecar_tunnels_accepted_total{transport="quic"}`,
		`sidecar_handshakes_refused_total{reason="revoked"}`,
		`sidecar_streams_total{kind="relay"} 3`,
		`sidecar_streams_total{kind="git"}`,
	})

	// The same listener serves Go's profiles, for 'go tool pprof'.
	resp, err := http.Get("http://" + metrics + "/debug/pprof/goroutine?debug=1")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "quic-go.(*Conn).run") {
		t.Errorf("/debug/pprof/goroutine: %s, no tunnel's goroutine in %d bytes", resp.Status, len(body))
	}
}
