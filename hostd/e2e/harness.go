// Package e2e is the product's process-level end-to-end suite and the
// harness it runs on: the real hostd and gt-agent binaries, built as 'make
// build' builds them, a throw-away town with its CA, agents with real
// certificates on loopback, git fixtures, and waits on hostd's status.
// The container suite of images/e2e runs on the same harness.
package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/polecat-sidecar/sidecar/hostd/api"
	"github.com/polecat-sidecar/sidecar/hostd/state"

	"github.com/polecat-sidecar/sidecar/tunnel/tunneltest"
)

// BinDir holds hostd, gt-agent, the shim gt and its bd link once Build
// has run.
var BinDir string

// Build compiles hostd, gt-agent and gt into a new temporary directory,
// links bd to gt, sets BinDir, and returns a function that removes it.
// Call it from TestMain.
func Build() (cleanup func(), err error) {
	dir, err := os.MkdirTemp("", "sidecar-e2e-bin")
	if err != nil {
		return nil, err
	}
	for pkg, bin := range map[string]string{"hostd": "hostd", "agent": "gt-agent", "agent/gt": "gt"} {
		// Built as 'make build' builds them, so benchmarks measure what ships.
		cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", filepath.Join(dir, bin), "github.com/polecat-sidecar/sidecar/"+pkg)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if b, err := cmd.CombinedOutput(); err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("building %s: %v\n%s", pkg, err, b)
		}
	}
	if err := os.Symlink("gt", filepath.Join(dir, "bd")); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	BinDir = dir
	return func() { os.RemoveAll(dir) }, nil
}

// Proc is a running binary whose output is kept for failure reports.
type Proc struct {
	Cmd  *exec.Cmd
	mu   sync.Mutex
	out  bytes.Buffer
	done chan struct{}
	err  error
}

// Write keeps the process's output; it is the process's stdout and stderr.
func (p *Proc) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.Write(b)
}

// Output is everything the process has printed so far.
func (p *Proc) Output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

// Start runs bin from BinDir with args and env added to this process's
// environment, and kills it when the test ends (printing its output if
// the test failed). A gt-agent gets its own relay socket and git port.
func Start(t testing.TB, env []string, bin string, args ...string) *Proc {
	t.Helper()
	return StartIn(t, "", env, bin, args...)
}

// StartIn is Start in the network namespace netns (see Command).
func StartIn(t testing.TB, netns string, env []string, bin string, args ...string) *Proc {
	t.Helper()
	p := &Proc{Cmd: Command(netns, filepath.Join(BinDir, bin), args...), done: make(chan struct{})}
	p.Cmd.Env = os.Environ()
	if bin == "gt-agent" {
		// Each agent its own relay socket, git port, state directory
		// (which it locks) and data root (where it marks the data it
		// received), unless the caller says otherwise.
		p.Cmd.Env = append(p.Cmd.Env, "GT_AGENT_SOCKET="+filepath.Join(t.TempDir(), "agent.sock"), "GT_AGENT_GIT_LISTEN=127.0.0.1:0",
			"GT_AGENT_STATE_DIR="+t.TempDir(), "GT_AGENT_DATA_ROOT="+t.TempDir())
	}
	p.Cmd.Env = append(p.Cmd.Env, env...)
	p.Cmd.Stdout, p.Cmd.Stderr = p, p
	if err := p.Cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.err = p.Cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		_ = p.Cmd.Process.Kill()
		<-p.done
		if t.Failed() {
			t.Logf("%s %s output:\n%s", bin, strings.Join(args, " "), p.Output())
		}
	})
	return p
}

// Exited waits up to d for the process to end and returns its error,
// failing the test if it is still running.
func (p *Proc) Exited(t testing.TB, d time.Duration) error {
	t.Helper()
	err := p.Wait(d)
	if errors.Is(err, ErrRunning) {
		t.Fatalf("%v; output:\n%s", err, p.Output())
	}
	return err
}

// ErrRunning is Wait's error for a process that has not ended.
var ErrRunning = errors.New("still running")

// Wait waits up to d for the process to end and returns its error, or
// one wrapping ErrRunning. Unlike Exited it does not fail the test, so a
// goroutine other than the test's may call it.
func (p *Proc) Wait(d time.Duration) error {
	select {
	case <-p.done:
		return p.err
	case <-time.After(d):
		return fmt.Errorf("%w after %v", ErrRunning, d)
	}
}

// Command is exec.Command of name in the network namespace netns (an `ip
// netns` name) through `ip netns exec`, which execs name, so the process
// is name's own; with netns empty, in this process's namespace.
func Command(netns, name string, args ...string) *exec.Cmd {
	if netns == "" {
		return exec.Command(name, args...)
	}
	return exec.Command("ip", append([]string{"netns", "exec", netns, name}, args...)...)
}

// Netns names the network namespaces a town's processes run in, for the
// benchmarks across an emulated link (internal/linkem): hostd serve in
// Host, agents and the git clients beside them in Agent. Empty: this
// process's namespace.
type Netns struct{ Host, Agent string }

// Town is a throw-away Gas Town root with an initialised CA.
type Town struct {
	t   testing.TB
	Dir string
	// Netns is where hostd serve and the agents run; this process's
	// namespace unless set.
	Netns Netns
}

// NewTown makes a town in a temporary directory and initialises its CA.
func NewTown(t testing.TB) *Town { return TownAt(t, t.TempDir()) }

// TownAt takes dir as the town (one Gas Town's gt install made, say) and
// initialises its CA.
func TownAt(t testing.TB, dir string) *Town {
	tw := &Town{t: t, Dir: dir}
	tw.Run("ca", "init", "--new") // never adopt the machine's gt-proxy-server CA
	return tw
}

// Run runs a hostd subcommand to completion and returns its output,
// failing the test on error.
func (tw *Town) Run(args ...string) string {
	tw.t.Helper()
	out, err := tw.Try(args...)
	if err != nil {
		tw.t.Fatalf("hostd %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// Try runs a hostd subcommand to completion and returns its output and
// error.
func (tw *Town) Try(args ...string) (string, error) {
	cmd := exec.Command(filepath.Join(BinDir, "hostd"), append([]string{"--town", tw.Dir}, args...)...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// Serve starts hostd on a free loopback port and returns it and the
// address.
func (tw *Town) Serve(args ...string) (*Proc, string) {
	tw.t.Helper()
	addr := tunneltest.FreeAddr(tw.t)
	return tw.ServeOn(addr, args...), addr
}

// ServeOn starts hostd listening on addr and waits for its control socket.
func (tw *Town) ServeOn(addr string, args ...string) *Proc {
	tw.t.Helper()
	p := tw.StartServe(addr, args...)
	tw.WaitStatus(5*time.Second, func(api.Status) bool { return true })
	return p
}

// StartServe starts hostd listening on addr without waiting for it (Up
// waits).
func (tw *Town) StartServe(addr string, args ...string) *Proc {
	tw.t.Helper()
	return StartIn(tw.t, tw.Netns.Host, nil, "hostd", append([]string{"--town", tw.Dir, "serve", "--listen", addr}, args...)...)
}

// Up waits up to d for hostd's control socket to answer, and says why it
// did not. Unlike WaitStatus it does not fail the test, so a goroutine
// other than the test's may call it.
func (tw *Town) Up(d time.Duration) error {
	_, err := tw.poll(d, func(api.Status) bool { return true })
	return err
}

// Issue writes a certificate for id and returns the directory holding it.
func (tw *Town) Issue(id string, ttl time.Duration) string {
	tw.t.Helper()
	out := filepath.Join(tw.Dir, "certs", strings.ReplaceAll(id, "/", "-"))
	tw.Run("cert", "issue", id, "--ttl", ttl.String(), "--out", out)
	return out
}

// AgentEnv is the environment of an agent reaching hostd at addr with the
// credentials in dir: by the name localhost when addr is a loopback
// address, else by addr's own address.
func AgentEnv(addr, dir string) []string {
	host, port, _ := net.SplitHostPort(addr)
	if ip := net.ParseIP(host); ip == nil || ip.IsLoopback() {
		host = "localhost"
	}
	return []string{
		"GT_PROXY_URL=https://" + net.JoinHostPort(host, port),
		"GT_PROXY_CERT=" + filepath.Join(dir, "client.crt"),
		"GT_PROXY_KEY=" + filepath.Join(dir, "client.key"),
		"GT_PROXY_CA=" + filepath.Join(dir, "ca.crt"),
	}
}

// Client asks the town's hostd through its control socket.
func (tw *Town) Client() *api.Client { return api.NewSocketClient(state.For(tw.Dir).Socket()) }

// WaitStatus polls the control socket until pred holds, and fails the test
// if it does not within d.
func (tw *Town) WaitStatus(d time.Duration, pred func(api.Status) bool) api.Status {
	tw.t.Helper()
	st, err := tw.poll(d, pred)
	if err != nil {
		tw.t.Fatal(err)
	}
	return st
}

// poll asks hostd for its status until pred holds, for up to d, and says
// what it saw last when it does not.
func (tw *Town) poll(d time.Duration, pred func(api.Status) bool) (api.Status, error) {
	c := tw.Client()
	deadline := time.Now().Add(d)
	var last api.Status
	var lastErr error
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		st, err := c.Status(ctx)
		cancel()
		if err == nil && pred(st) {
			return st, nil
		}
		last, lastErr = st, err
		time.Sleep(20 * time.Millisecond)
	}
	return last, fmt.Errorf("status condition not met within %v; last status %+v, err %v", d, last, lastErr)
}

// Connected is true when the named polecat has a tunnel up, on transport
// unless that is empty.
func Connected(name, transport string) func(api.Status) bool {
	return func(st api.Status) bool {
		for _, p := range st.Polecats {
			if p.Name == name && p.Connected && (transport == "" || p.Transport == transport) {
				return true
			}
		}
		return false
	}
}

// InState is true when the named polecat is in state.
func InState(name, state string) func(api.Status) bool {
	return func(st api.Status) bool {
		for _, p := range st.Polecats {
			if p.Name == name && p.State == state {
				return true
			}
		}
		return false
	}
}

// TmuxSocket is a new tmux socket path for a test. The tmux server on it
// (an agent's: its sessions outlive the agent by design) is ended when the
// test ends, so no test leaves one running.
func TmuxSocket(t testing.TB) string {
	sock := filepath.Join(t.TempDir(), "tmux.sock")
	t.Cleanup(func() { _ = exec.Command("tmux", "-S", sock, "kill-server").Run() })
	return sock
}
