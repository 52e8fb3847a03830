package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestUpRefusesSettings: gt-agent up stops before it joins or connects on
// any setting it cannot use as given, naming the key, the value, where it
// came from and what it must be; a config key or GT_AGENT_* variable that
// is no flag of any command is refused with the nearest that is.
func TestUpRefusesSettings(t *testing.T) {
	cases := []struct {
		name, yaml string
		env        map[string]string
		args       []string
		want       string
	}{
		{name: "misspelt key", yaml: "idle-timout: 3s\n", want: "idle-timout is not a setting (did you mean idle-timeout?)"},
		{name: "misspelt variable", env: map[string]string{"GT_AGENT_BEAT_INTERAVL": "1s"},
			want: "environment variable GT_AGENT_BEAT_INTERAVL is not a setting (did you mean GT_AGENT_BEAT_INTERVAL?)"},
		{name: "duration without a unit", yaml: "beat-interval: 5\n", want: "setting beat-interval: 5 has no unit: give one, as in 5s or 5m"},
		{name: "keepalive not below the idle timeout", args: []string{"--keepalive", "10s"}, env: map[string]string{"GT_AGENT_IDLE_TIMEOUT": "10s"},
			want: "setting keepalive is 10s (flag --keepalive): it must be below idle-timeout, 10s (env GT_AGENT_IDLE_TIMEOUT)"},
		{name: "zero beat interval", args: []string{"--beat-interval", "0s"}, want: "setting beat-interval is 0s (flag --beat-interval): it must be above 0"},
		{name: "zero checkpoint", yaml: "sync-checkpoint: 0s\n", want: "setting sync-checkpoint is 0s (config file "},
		{name: "negative connect timeout", args: []string{"--connect-timeout", "-1s"}, want: "setting connect-timeout is -1s (flag --connect-timeout): it must be above 0"},
		{name: "unknown transport", env: map[string]string{"GT_AGENT_TRANSPORT": "udp"}, want: `setting transport is "udp" (env GT_AGENT_TRANSPORT): it must be auto, quic or tcp`},
		{name: "bad busy pattern", args: []string{"--nudge-busy", "("}, want: `setting nudge-busy is "(" (flag --nudge-busy): error parsing regexp`},
		{name: "bad uid", args: []string{"--git-allow-uid", "root"}, want: `setting git-allow-uid is [root] (flag --git-allow-uid): --git-allow-uid "root": want a uid, or "any"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			dir := t.TempDir()
			args := []string{}
			if c.yaml != "" {
				cfg := filepath.Join(dir, "agent.yaml")
				if err := os.WriteFile(cfg, []byte(c.yaml), 0o600); err != nil {
					t.Fatal(err)
				}
				args = append(args, "--config", cfg)
			}
			args = append(append(args, "up", "--url", "https://localhost:1", "--state-dir", filepath.Join(dir, "state"), "--join", "token"), c.args...)
			out, code := runAgent(t, args...)
			if code != 1 || !strings.Contains(out, c.want) {
				t.Fatalf("gt-agent %v: exit %d, output:\n%s\nwant exit 1 and %q", args, code, out, c.want)
			}
			if _, err := os.Stat(filepath.Join(dir, "state")); err == nil {
				t.Errorf("gt-agent started (made its state directory) before refusing its settings")
			}
		})
	}
}
