package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/polecat-sidecar/sidecar/agent/statedir"
	"github.com/polecat-sidecar/sidecar/internal/exit"
)

// runAgent runs gt-agent's command tree in this process, as main does,
// and returns what it printed (stdout and stderr) and its exit status.
func runAgent(t *testing.T, args ...string) (string, int) {
	t.Helper()
	var out bytes.Buffer
	root := newRoot()
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(append([]string{"--log-level", "error"}, args...))
	code := exit.Code(root.Execute(), "gt-agent", &out)
	return out.String(), code
}

// TestExitStatus: each command's exit status and its one line of error,
// from the command tree run as main runs it, on real files and sockets.
func TestExitStatus(t *testing.T) {
	dir := t.TempDir()
	locked := filepath.Join(dir, "locked")
	held, err := statedir.Lock(locked)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { held.Release() })
	status := filepath.Join(dir, "status")
	tests := []struct {
		name string
		args []string
		code int
		want string // the output, from its start
	}{
		{"unknown command", []string{"bogus"}, 1, `gt-agent: unknown command "bogus" for "gt-agent"`},
		{"mistyped command", []string{"sesion"}, 1, `gt-agent: unknown command "sesion" for "gt-agent": did you mean session`},
		{"mistyped nested command", []string{"session", "strat", "--", "claude"}, 1,
			`gt-agent: unknown command "strat" for "gt-agent session": did you mean start? ('gt-agent session --help' lists its commands)` + "\n"},
		{"version", []string{"version"}, 0, "gt-agent dev (revision "},
		{"session-run without its flag", []string{"session-run", "--", "true"}, 1, `gt-agent: required flag(s) "status-file" not set`},
		{"session-run passes the command's status on", []string{"session-run", "--status-file", status, "--", "sh", "-c", "exit 7"}, 7, ""},
		{"exec with no agent", []string{"exec", "--socket", filepath.Join(dir, "none.sock"), "--", "gt", "version"}, 255, ""},
		{"hook with no agent exits 0", []string{"hook", "--socket", filepath.Join(dir, "none.sock"), "Stop"}, 0, "gt-agent hook: "},
		{"up watching two ways", []string{"up", "--url", "https://localhost", "--watch-session", "s", "--", "sleep", "1"}, 1,
			"gt-agent: give one of: -- CMD ARGS, --watch-session, --watch-process\n"},
		{"up with no URL", []string{"up", "--url", ""}, 1, "gt-agent: no hostd URL: set GT_PROXY_URL or --url (https://<host>:9876)\n"},
		{"up with a bad URL", []string{"up", "--url", "http://localhost"}, 1, `gt-agent: hostd URL "http://localhost": want https://<host>[:port]` + "\n"},
		{"up on a state dir in use", []string{"up", "--url", "https://localhost", "--state-dir", locked}, 1,
			"gt-agent: state directory " + locked + ": another gt-agent is using it: give each agent its own --state-dir (env GT_AGENT_STATE_DIR)\n"},
		{"up with no certificate and no token file", []string{"up", "--url", "https://localhost", "--state-dir", filepath.Join(dir, "fresh"), "--join-file", filepath.Join(dir, "none")}, 1,
			"gt-agent: no usable certificate ("},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, code := runAgent(t, tt.args...)
			if code != tt.code || !strings.HasPrefix(got, tt.want) || strings.Count(got, "gt-agent: ") > 1 {
				t.Fatalf("gt-agent %v: exit %d, %q; want %d and %q", tt.args, code, got, tt.code, tt.want)
			}
		})
	}
	if b, err := os.ReadFile(status); err != nil || string(b) != "7\n" {
		t.Errorf("session-run recorded %q, %v; want 7", b, err)
	}
}
