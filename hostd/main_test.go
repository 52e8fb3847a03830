package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"encoding/json"
	"log/slog"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/polecat-sidecar/sidecar/hostd/api"
	"github.com/polecat-sidecar/sidecar/hostd/pki"
	"github.com/polecat-sidecar/sidecar/hostd/server"
	"github.com/polecat-sidecar/sidecar/hostd/state"
	"github.com/polecat-sidecar/sidecar/internal/cli"
	"github.com/polecat-sidecar/sidecar/internal/exit"
	"github.com/polecat-sidecar/sidecar/internal/unixsock/unixsocktest"
	"github.com/polecat-sidecar/sidecar/tunnel"
	"github.com/polecat-sidecar/sidecar/tunnel/tunneltest"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// runHostd runs hostd's command tree in this process, as main does, with
// --town town, stdin as standard input, and returns what it printed
// (stdout and stderr) and its exit status.
func runHostd(t *testing.T, town, stdin string, args ...string) (string, int) {
	t.Helper()
	var out bytes.Buffer
	root := newRoot()
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetIn(strings.NewReader(stdin))
	root.SetArgs(append([]string{"--town", town, "--log-level", "error"}, args...))
	code := exit.Code(root.Execute(), "hostd", &out)
	return out.String(), code
}

// run is one hostd command line and what it answers: its exit status
// and text its output holds.
type run struct {
	args []string
	code int
	want string
}

// checkRuns runs each command line against town.
func checkRuns(t *testing.T, town string, runs []run) {
	t.Helper()
	for _, r := range runs {
		got, code := runHostd(t, town, "", r.args...)
		if code != r.code || !strings.Contains(got, r.want) {
			t.Errorf("hostd %v: exit %d, %q; want %d and %q", r.args, code, got, r.code, r.want)
		}
	}
}

// startHostd makes a town with a CA and runs a hostd server for it, with
// its control socket, until the test ends. It returns the town and the
// server's tunnel address.
func startHostd(t *testing.T) (town, addr string) {
	t.Helper()
	town = newTown(t)
	return town, serveTown(t, town)
}

// newTown makes a town with a CA.
func newTown(t *testing.T) string {
	t.Helper()
	town := unixsocktest.Dir(t)
	if _, _, err := pki.Init(pki.Dir(town), ""); err != nil {
		t.Fatal(err)
	}
	return town
}

// serveTown runs a hostd server for town, with its control socket, until
// the test ends, and returns its tunnel address.
func serveTown(t *testing.T, town string) (addr string) {
	t.Helper()
	addr = tunneltest.FreeAddr(t)
	s, err := server.New(server.Config{Town: town, Listen: addr, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	for range 250 {
		if _, err := api.NewSocketClient(state.For(town).Socket()).Status(ctx); err == nil {
			return addr
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("hostd's control socket did not come up")
	return ""
}

// connect holds a tunnel to the hostd at addr as the polecat id, with a
// certificate from town's CA, until the test ends, and returns it once
// hostd shows it; it sends no beat.
func connect(t *testing.T, town, addr string, id wire.Identity) *tunnel.Session {
	t.Helper()
	ca, err := pki.Open(pki.Dir(town), "")
	if err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := ca.IssueClient(id, key.Public(), time.Hour, pki.SourceIssue)
	if err != nil {
		t.Fatal(err)
	}
	s := connectWith(t, ca, addr, tls.Certificate{Certificate: [][]byte{cert.Raw}, PrivateKey: key, Leaf: cert})
	for range 250 {
		if d, err := api.NewSocketClient(state.For(town).Socket()).Polecat(context.Background(), api.Identity(id)); err == nil && d.Connected {
			return s
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("hostd does not show %s", id)
	return nil
}

// connectWith holds a tunnel to the hostd at addr with the client
// certificate tc, verifying hostd against ca, until the test ends, and
// returns it.
func connectWith(t *testing.T, ca *pki.CA, addr string, tc tls.Certificate) *tunnel.Session {
	t.Helper()
	s, err := tunnel.Dial(context.Background(), addr, tunnel.ClientConfig{
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &tc, nil },
		RootCAs:              ca.Pool(),
		ServerName:           "localhost",
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

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
			out, code := runHostd(t, town, "", tt.args...)
			if code != 1 || !strings.HasPrefix(out, tt.want) || strings.Count(out, "hostd: ") != 1 {
				t.Fatalf("hostd %v: exit %d, output %q; want 1 and one line %q...", tt.args, code, out, tt.want)
			}
		})
	}
}

// TestSubcommandsRunNamed: every subcommand that runs (all but the groups,
// version, which internal/cli makes, and cobra's completion) runs a method
// named run of its options, or is made by showCmd (output.go) to fetch one
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
		if !strings.HasSuffix(name, ").run-fm") && !strings.Contains(name, ".showCmd[") {
			t.Errorf("%s runs %s: give it an options type whose run method is its RunE", c.CommandPath(), name)
		}
	}
	walk(newRoot())
	if runs < 15 {
		t.Fatalf("found %d subcommands that run: the walk is wrong", runs)
	}
}

// TestVersion: hostd version answers, as text and as one JSON object,
// even when the config file it would read is missing.
func TestVersion(t *testing.T) {
	town := t.TempDir()
	bad := []string{"--config", town + "/none.yaml"}
	if got, code := runHostd(t, town, "", append(bad, "version")...); code != 0 || !strings.HasPrefix(got, "hostd dev (revision ") {
		t.Fatalf("version: exit %d, %q", code, got)
	}
	got, code := runHostd(t, town, "", append(bad, "version", "--json")...)
	var b cli.Build
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
			root := newRoot()
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
