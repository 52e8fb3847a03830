package serve

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/polecat-sidecar/sidecar/hostd/cli/clitest"
)

// hostd is hostd's root command over serve alone.
var hostd = clitest.Of(NewServeCmd)

// TestServeRefusesSettings: hostd serve stops at start, before it
// listens, on any setting it cannot use as given, naming the key, the
// value, where it came from and what it must be; and every problem at
// once.
func TestServeRefusesSettings(t *testing.T) {
	cases := []struct {
		name, yaml string
		env        map[string]string
		args       []string
		want       []string
	}{
		{name: "misspelt key", yaml: "idle_timout: 3s\n", want: []string{"config ", "idle_timout is not a setting (did you mean idle_timeout?)", "'hostd config show' lists every setting"}},
		{name: "key at the wrong level", yaml: "grace: 1m\n", want: []string{"grace is not a setting (did you mean liveness.grace?)"}},
		{name: "misspelt variable", env: map[string]string{"HOSTD_IDLE_TIMOUT": "3s"}, want: []string{"environment variable HOSTD_IDLE_TIMOUT is not a setting (did you mean HOSTD_IDLE_TIMEOUT?)"}},
		{name: "duration without a unit", yaml: "liveness:\n  grace: 10\n", want: []string{"setting liveness.grace: 10 has no unit: give one, as in 10s or 10m"}},
		{name: "duration without a unit, variable", env: map[string]string{"HOSTD_CERT_TTL": "24"}, want: []string{"setting cert_ttl: 24 has no unit"}},
		{name: "zero where zero is out of range", yaml: "cert_ttl: 0s\n", want: []string{"setting cert_ttl is 0s (config file ", "): it must be above 0"}},
		{name: "negative certificate lifetime", args: []string{"--cert-ttl", "-1h"}, want: []string{"setting cert_ttl is -1h0m0s (flag --cert-ttl): it must be above 0"}},
		{name: "keepalive not below the idle timeout", args: []string{"--keepalive", "5s"}, env: map[string]string{"HOSTD_IDLE_TIMEOUT": "5s"},
			want: []string{"setting keepalive is 5s (flag --keepalive): it must be below idle_timeout, 5s (env HOSTD_IDLE_TIMEOUT)"}},
		{name: "more handshakes per source than in all", args: []string{"--max-handshakes", "8"},
			want: []string{"setting max_handshakes_per_source is 16 (default): it must be at most max_handshakes, 8 (flag --max-handshakes)"}},
		{name: "bad branch pattern", yaml: "git:\n  branches:\n    gastown: ['polecat/*']\n",
			want: []string{`setting git.branches.gastown is [polecat/*] (config file `, `): branch pattern "polecat/*": needs {name} exactly once`}},
		{name: "zero meaning the default", args: []string{"--git-reconcile", "0s"}, want: []string{"setting git.reconcile is 0s (flag --git-reconcile): it must not be 0 (negative: never reconcile)"}},
		{name: "upstream retry above its longest wait", args: []string{"--git-upstream-retry", "1h"},
			want: []string{"setting git.upstream_retry is 1h0m0s (flag --git-upstream-retry): it must be at most 5m0s\n"}},
		{name: "own data meeting the rig's", yaml: "sync:\n  include: [.claude]\n", want: []string{`setting sync.rig_include is ".claude/settings.json" (default): ` +
			`a path is either the polecat's own (it comes back) or its rig's (it never does): it must not meet sync.include, ".claude" (config file `}},
		{name: "list for a map", yaml: "relay:\n  allow: [gt]\n", want: []string{"setting relay.allow: [gt] is not a map of names to a list of strings"}},
		{name: "fraction for a count", yaml: "nudge:\n  depth: 2.5\n", want: []string{"setting nudge.depth: 2.5 is not a whole number"}},
		{name: "relative data root", yaml: "sync:\n  roots:\n    gastown: data/{name}\n", want: []string{`setting sync.roots.gastown is "data/{name}" (config file `, "it must be an absolute path"}},
		{name: "admin API off loopback", args: []string{"--admin-listen", "0.0.0.0:9877"}, want: []string{`setting admin_listen is "0.0.0.0:9877" (flag --admin-listen): "0.0.0.0:9877" is not a loopback address`}},
		{name: "negative reap", args: []string{"--sandbox-reap", "-1s"}, want: []string{"setting sandbox.reap is -1s (flag --sandbox-reap): it must be at least 0"}},
		{name: "every problem at once", args: []string{"--nudge-depth", "0", "--grace", "-1s"}, want: []string{
			"hostd serve's settings:\nsetting liveness.grace is -1s (flag --grace): it must be above 0\nsetting nudge.depth is 0 (flag --nudge-depth): it must be above 0\n"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			town := t.TempDir()
			args := []string{}
			if c.yaml != "" {
				cfg := filepath.Join(town, "config.yaml")
				if err := os.WriteFile(cfg, []byte(c.yaml), 0o600); err != nil {
					t.Fatal(err)
				}
				args = append(args, "--config", cfg)
			}
			args = append(append(args, "serve", "--listen", "127.0.0.1:0"), c.args...)
			out, code := hostd.Run(t, town, "", args...)
			for _, w := range c.want {
				if code != 1 || !strings.Contains(out, w) {
					t.Fatalf("hostd %v: exit %d, output:\n%s\nwant exit 1 and %q", args, code, out, w)
				}
			}
		})
	}
}
