// Package clitest runs hostd's commands in tests as main runs them, and
// gives them a town with a CA, a hostd serving it, and polecats' tunnels
// to it. Only tests import it.
package clitest

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/polecat-sidecar/sidecar/hostd/api"
	"github.com/polecat-sidecar/sidecar/hostd/cli/command"
	"github.com/polecat-sidecar/sidecar/hostd/pki"
	"github.com/polecat-sidecar/sidecar/hostd/server"
	"github.com/polecat-sidecar/sidecar/hostd/state"
	"github.com/polecat-sidecar/sidecar/internal/exit"
	"github.com/polecat-sidecar/sidecar/internal/unixsock/unixsocktest"
	"github.com/polecat-sidecar/sidecar/tunnel"
	"github.com/polecat-sidecar/sidecar/tunnel/tunneltest"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// Hostd makes a hostd command tree, afresh for each command line a test
// runs: hostd/cli's NewRoot, or Of a package's own commands.
type Hostd func() *cobra.Command

// Of is the tree of hostd's root command over subs alone (and version),
// for the tests of a package's own commands.
func Of(subs ...command.New) Hostd {
	return func() *cobra.Command { return command.NewRoot(command.NewApp(), subs...) }
}

// Run runs a tree of h in this process, as main does, with --town town,
// stdin as standard input, and returns what it printed (stdout and
// stderr) and its exit status.
func (h Hostd) Run(t *testing.T, town, stdin string, args ...string) (string, int) {
	t.Helper()
	var out bytes.Buffer
	root := h()
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetIn(strings.NewReader(stdin))
	root.SetArgs(append([]string{"--town", town, "--log-level", "error"}, args...))
	code := exit.Code(root.Execute(), "hostd", &out)
	return out.String(), code
}

// Want is one hostd command line and what it answers: its exit status
// and text its output holds.
type Want struct {
	Args []string
	Code int
	Out  string
}

// Check runs each command line against town.
func (h Hostd) Check(t *testing.T, town string, wants []Want) {
	t.Helper()
	for _, w := range wants {
		got, code := h.Run(t, town, "", w.Args...)
		if code != w.Code || !strings.Contains(got, w.Out) {
			t.Errorf("hostd %v: exit %d, %q; want %d and %q", w.Args, code, got, w.Code, w.Out)
		}
	}
}

// StartHostd makes a town with a CA and runs a hostd server for it, with
// its control socket, until the test ends. It returns the town and the
// server's tunnel address.
func StartHostd(t *testing.T) (town, addr string) {
	t.Helper()
	town = NewTown(t)
	return town, Serve(t, town)
}

// NewTown makes a town with a CA.
func NewTown(t *testing.T) string {
	t.Helper()
	town := unixsocktest.Dir(t)
	if _, _, err := pki.Init(pki.Dir(town), ""); err != nil {
		t.Fatal(err)
	}
	return town
}

// Serve runs a hostd server for town, with its control socket, until the
// test ends, and returns its tunnel address.
func Serve(t *testing.T, town string) (addr string) {
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
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if _, err := api.NewSocketClient(state.For(town).Socket()).Status(ctx); err == nil {
			return addr
		}
	}
	t.Fatal("hostd's control socket did not come up in 30 s")
	return ""
}

// Connect holds a tunnel to the hostd at addr as the polecat id, with a
// certificate from town's CA, until the test ends, and returns it once
// hostd shows it; it sends no beat.
func Connect(t *testing.T, town, addr string, id wire.Identity) *tunnel.Session {
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
	s := ConnectWith(t, ca, addr, tls.Certificate{Certificate: [][]byte{cert.Raw}, PrivateKey: key, Leaf: cert})
	WaitConnected(t, town, id)
	return s
}

// WaitConnected waits until the hostd serving town shows id connected:
// a tunnel dialled is not yet one hostd has registered.
func WaitConnected(t *testing.T, town string, id wire.Identity) {
	t.Helper()
	c := api.NewSocketClient(state.For(town).Socket())
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if d, err := c.Polecat(context.Background(), api.Identity(id)); err == nil && d.Connected {
			return
		}
	}
	t.Fatalf("hostd does not show %s connected after 30 s", id)
}

// ConnectWith holds a tunnel to the hostd at addr with the client
// certificate tc, verifying hostd against ca, until the test ends, and
// returns it.
func ConnectWith(t *testing.T, ca *pki.CA, addr string, tc tls.Certificate) *tunnel.Session {
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
