package e2e

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestHostileConfig: a config file, flag or variable hostd cannot use is a
// clear error at start, never a silent default: the key (and the nearest
// known one for a key that is none), the value, where it came from and
// what it must be.
func TestHostileConfig(t *testing.T) {
	tw := NewTown(t)
	cases := []struct {
		name, yaml string
		env        []string
		want       string
	}{
		{"malformed YAML", "listen: [\n", nil, "reading config"},
		{"duration", "cert_ttl: forever\n", nil, "setting cert_ttl: forever is not a duration"},
		{"nested duration", "liveness:\n  grace: soon\n", nil, "setting liveness.grace: soon is not a duration"},
		{"number", "relay:\n  max_concurrent: lots\n", nil, "setting relay.max_concurrent: lots is not a whole number"},
		{"boolean", "git:\n  upstream: maybe\n", nil, "setting git.upstream: maybe is not true or false"},
		{"environment", "", []string{"HOSTD_IDLE_TIMEOUT=later"}, "setting idle_timeout: later is not a duration"},
		{"log level", "log_level: loud\n", nil, "--log-level"},
		{"out of range", "nudge:\n  depth: -1\n", nil, "setting nudge.depth is -1 (config file "},
		{"tunnel out of range", "", []string{"HOSTD_KEEPALIVE=-1s"}, "setting keepalive is -1s (env HOSTD_KEEPALIVE): it must be at least 0"},
		{"unknown key", "idle_timout: 3s\n", nil, "idle_timout is not a setting (did you mean idle_timeout?)"},
		{"unknown variable", "", []string{"HOSTD_GRACE=1m"}, "environment variable HOSTD_GRACE is not a setting (did you mean HOSTD_LIVENESS_GRACE?)"},
		{"duration without a unit", "liveness:\n  grace: 10\n", nil, "setting liveness.grace: 10 has no unit: give one, as in 10s"},
		{"zero certificate lifetime", "cert_ttl: 0s\n", nil, "setting cert_ttl is 0s (config file "},
		{"keepalive not below the idle timeout", "keepalive: 10s\n", []string{"HOSTD_IDLE_TIMEOUT=10s"}, "it must be below idle_timeout, 10s (env HOSTD_IDLE_TIMEOUT)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := filepath.Join(t.TempDir(), "config.yaml")
			_ = os.WriteFile(cfg, []byte(c.yaml), 0o600)
			cmd := exec.Command(filepath.Join(BinDir, "hostd"), "--town", tw.Dir, "--config", cfg, "serve", "--listen", "127.0.0.1:0")
			cmd.Env = append(os.Environ(), c.env...)
			out, err := runWithin(t, cmd, 10*time.Second)
			if err == nil || !strings.Contains(out, c.want) {
				t.Fatalf("err %v, output %q; want %q", err, out, c.want)
			}
		})
	}
}

// TestMetricsListenFatal: a metrics address hostd cannot listen on stops
// it with the setting named, instead of a log line and no metrics.
func TestMetricsListenFatal(t *testing.T) {
	tw := NewTown(t)
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	cmd := exec.Command(filepath.Join(BinDir, "hostd"), "--town", tw.Dir, "serve", "--listen", "127.0.0.1:0", "--metrics-listen", held.Addr().String())
	out, err := runWithin(t, cmd, 10*time.Second)
	if err == nil || !strings.Contains(out, "serving metrics (metrics_listen): ") || !strings.Contains(out, "address already in use") {
		t.Fatalf("err %v, output %q", err, out)
	}
}

// TestAgentConfigFile: gt-agent takes its settings from a YAML file, and
// refuses one it cannot use.
func TestAgentConfigFile(t *testing.T) {
	tw := NewTown(t)
	_, addr := tw.Serve()
	certs := tw.Issue("gastown/furiosa", time.Hour)
	dir := t.TempDir()
	good := filepath.Join(dir, "agent.yaml")
	_, port, _ := strings.Cut(addr, ":")
	_ = os.WriteFile(good, []byte("url: https://localhost:"+port+"\ncert: "+filepath.Join(certs, "client.crt")+
		"\nkey: "+filepath.Join(certs, "client.key")+"\nca: "+filepath.Join(certs, "ca.crt")+"\ngit-listen: ''\n"), 0o600)
	Start(t, []string{"GT_PROXY_URL=", "GT_PROXY_CERT=", "GT_PROXY_KEY=", "GT_PROXY_CA="}, "gt-agent", "--config", good, "up", "--watch-process", "none")
	tw.WaitStatus(10*time.Second, Connected("furiosa", ""))

	for name, yaml := range map[string]string{
		"malformed":    "url: [\n",
		"duration":     "beat-interval: often\n",
		"bad url type": "url: [1, 2]\n",
	} {
		t.Run(name, func(t *testing.T) {
			cfg := filepath.Join(t.TempDir(), "agent.yaml")
			_ = os.WriteFile(cfg, []byte(yaml), 0o600)
			cmd := exec.Command(filepath.Join(BinDir, "gt-agent"), "--config", cfg, "up")
			out, err := runWithin(t, cmd, 10*time.Second)
			if err == nil || !(strings.Contains(out, "config") || strings.Contains(out, "setting") || strings.Contains(out, "URL")) {
				t.Fatalf("err %v, output %q", err, out)
			}
		})
	}
}

// runWithin runs cmd and fails the test if it is still running after d.
func runWithin(t *testing.T, cmd *exec.Cmd, d time.Duration) (string, error) {
	t.Helper()
	done := make(chan struct{})
	var out []byte
	var err error
	go func() { out, err = cmd.CombinedOutput(); close(done) }()
	select {
	case <-done:
		return string(out), err
	case <-time.After(d):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("still running after %v; output:\n%s", d, out)
		return "", nil
	}
}
