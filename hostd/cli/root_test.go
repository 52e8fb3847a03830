package cli

import (
	"bytes"
	"encoding/json"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/polecat-sidecar/sidecar/hostd/cli/clitest"
	sharedcli "github.com/polecat-sidecar/sidecar/internal/cli"
	"github.com/polecat-sidecar/sidecar/internal/unixsock/unixsocktest"
)

// hostd is the whole command tree, as main runs it.
var hostd clitest.Hostd = func() *cobra.Command { return NewRoot() }

// TestExitStatus: an error ends hostd with status 1 and one line saying
// what went wrong, whether cobra, a flag, an argument or the daemon
// refused.
func TestExitStatus(t *testing.T) {
	town := unixsocktest.Dir(t) // "hostd not running" dials its socket
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"unknown command", []string{"bogus"}, `hostd: unknown command "bogus" for "hostd"`},
		{"mistyped nested command", []string{"cert", "revok", "gastown/nobody"}, `hostd: unknown command "revok" for "hostd cert": did you mean revoke?`},
		{"mistyped sync command", []string{"sync", "pul", "gastown/furiosa"}, `hostd: unknown command "pul" for "hostd sync": did you mean pull or push?`},
		{"mistyped ca command", []string{"ca", "int"}, `hostd: unknown command "int" for "hostd ca": did you mean init?`},
		{"unknown flag", []string{"status", "--bogus"}, "hostd: unknown flag: --bogus"},
		{"bad flag value", []string{"cert", "issue", "gastown/furiosa", "--ttl", "soon"}, `hostd: invalid argument "soon" for "--ttl" flag`},
		{"too many arguments", []string{"alive", "gastown/furiosa", "gastown/nux"}, "hostd: accepts 1 arg(s), received 2"},
		{"bad identity", []string{"nudge", "furiosa", "hello"}, `hostd: identity "furiosa": want <rig>/<name>`},
		{"no CA", []string{"token", "create", "gastown/furiosa"}, "hostd: no CA at " + town},
		{"hostd not running", []string{"alive", "gastown/furiosa"}, "hostd: hostd is not running"},
		{"unreadable config", []string{"--config", town + "/none.yaml", "status"}, "hostd: reading config " + town + "/none.yaml"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, code := hostd.Run(t, town, "", tt.args...)
			if code != 1 || !strings.HasPrefix(out, tt.want) || strings.Count(out, "hostd: ") != 1 {
				t.Fatalf("hostd %v: exit %d, output %q; want 1 and one line %q...", tt.args, code, out, tt.want)
			}
		})
	}
}

// TestSubcommandsRunNamed: every subcommand that runs (all but the groups,
// version, which internal/cli makes, and cobra's completion) runs a method
// named run of its options, or is made by command.ShowCmd to fetch one
// value and print it, as docs/architecture.md says: a constructor and a
// named run function, never a closure doing the work in the constructor.
func TestSubcommandsRunNamed(t *testing.T) {
	var walk func(c *cobra.Command)
	runs := 0
	walk = func(c *cobra.Command) {
		if c.Name() == "version" || c.Name() == "completion" {
			return
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
		if c.HasSubCommands() || c == c.Root() {
			return
		}
		runs++
		if c.RunE == nil {
			t.Errorf("hostd %s has no RunE", c.CommandPath())
			return
		}
		name := runtime.FuncForPC(reflect.ValueOf(c.RunE).Pointer()).Name()
		if !strings.HasSuffix(name, ").run-fm") && !strings.Contains(name, "/command.ShowCmd[") {
			t.Errorf("%s runs %s: give it an options type whose run method is its RunE", c.CommandPath(), name)
		}
	}
	walk(hostd())
	if runs < 15 {
		t.Fatalf("found %d subcommands that run: the walk is wrong", runs)
	}
}

// TestVersion: hostd version answers, as text and as one JSON object,
// even when the config file it would read is missing.
func TestVersion(t *testing.T) {
	town := t.TempDir()
	bad := []string{"--config", town + "/none.yaml"}
	if got, code := hostd.Run(t, town, "", append(bad, "version")...); code != 0 || !strings.HasPrefix(got, "hostd dev (revision ") {
		t.Fatalf("version: exit %d, %q", code, got)
	}
	got, code := hostd.Run(t, town, "", append(bad, "version", "--json")...)
	var b sharedcli.Build
	if err := json.Unmarshal([]byte(got), &b); code != 0 || err != nil || b.Version != "dev" || b.OS != runtime.GOOS || b.Arch != runtime.GOARCH || b.GoVersion != runtime.Version() {
		t.Fatalf("version --json: exit %d, %v: %q", code, err, got)
	}
}

// TestTownFromEnvironment: without --town the town is $HOSTD_TOWN, else
// $GT_TOWN, else $GT_ROOT (the town root Gas Town sets in each agent
// session, where hostd run runs as its exec wrapper), else ~/gt.
func TestTownFromEnvironment(t *testing.T) {
	home := t.TempDir()
	tests := []struct {
		name string
		env  map[string]string
		want string
	}{
		{"none", nil, home + "/gt"},
		{"GT_ROOT", map[string]string{"GT_ROOT": "/towns/root"}, "/towns/root"},
		{"GT_TOWN before GT_ROOT", map[string]string{"GT_TOWN": "/towns/town", "GT_ROOT": "/towns/root"}, "/towns/town"},
		{"HOSTD_TOWN first", map[string]string{"HOSTD_TOWN": "/towns/hostd", "GT_TOWN": "/towns/town", "GT_ROOT": "/towns/root"}, "/towns/hostd"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("HOME", home)
			for _, k := range []string{"HOSTD_TOWN", "GT_TOWN", "GT_ROOT"} {
				t.Setenv(k, tt.env[k])
			}
			var out bytes.Buffer
			root := hostd()
			root.SetOut(&out)
			root.SetErr(&out)
			root.SetArgs([]string{"config", "show", "--json"})
			_ = root.Execute() // config show may refuse the missing town's other settings; the town is shown all the same
			if !strings.Contains(out.String(), `"`+tt.want+`"`) {
				t.Fatalf("town: want %q in\n%s", tt.want, out.String())
			}
		})
	}
}
