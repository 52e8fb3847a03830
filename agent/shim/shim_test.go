package shim

import (
	"bytes"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// heard is what the agent heard from one shim.
type heard struct {
	req   wire.RelayRequest
	stdin string
}

// agent listens on a real unix socket and, for the one shim that
// connects, reads its request and stdin to their end, then sends frames.
func agent(t *testing.T, frames ...[]byte) (socket string, got <-chan heard) {
	t.Helper()
	socket = filepath.Join(t.TempDir(), "agent.sock")
	ln, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	ch := make(chan heard, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		var h heard
		fr := wire.NewRelayFrameReader(c)
		for {
			typ, payload, err := fr.Next()
			if err != nil {
				break
			}
			if typ == wire.RelayFrameRequest {
				h.req, _ = wire.DecodeRelayRequest(payload)
			}
			if typ == wire.RelayFrameStdin {
				h.stdin += string(payload)
			}
			if typ == wire.RelayFrameStdinClose {
				break
			}
		}
		ch <- h
		for _, f := range frames {
			_, _ = c.Write(f)
		}
	}()
	return socket, ch
}

// frame encodes one relay frame.
func frame(typ byte, payload string) []byte {
	var b bytes.Buffer
	_ = wire.WriteRelayFrame(&b, typ, []byte(payload))
	return b.Bytes()
}

func TestRun(t *testing.T) {
	t.Setenv("TERM", "xterm-test")
	t.Setenv("GT_SECRET", "not for the host")
	tests := []struct {
		name           string
		shim           string
		frames         [][]byte
		code           int
		stdout, stderr string
	}{
		{"exit status", "gt", [][]byte{frame(wire.RelayFrameAttached, ""), frame(wire.RelayFrameStdout, "out"), frame(wire.RelayFrameStderr, "err"),
			frame(wire.RelayFrameStdout, "put"), frame(wire.RelayFrameExit, `{"code":3}`)}, 3, "output", "err"},
		{"killed by a signal", "bd", [][]byte{frame(wire.RelayFrameExit, `{"signal":9,"code":137}`)}, 137, "", ""},
		{"hostd refused", "bd", [][]byte{frame(wire.RelayFrameAttached, ""), frame(wire.RelayFrameError, "bd is not allowed\xff")}, ExitUnavailable, "", "bd: hostd (on the host): bd is not allowed?\n"},
		{"hostd failed after output", "gt", [][]byte{frame(wire.RelayFrameAttached, ""), frame(wire.RelayFrameStderr, "gt: own words\n"), frame(wire.RelayFrameError, "killed: relay.timeout")}, ExitUnavailable, "", "gt: own words\ngt: hostd (on the host): killed: relay.timeout\n"},
		{"the agent has no tunnel", "bd", [][]byte{frame(wire.RelayFrameError, "no tunnel to hostd")}, ExitUnavailable, "", "bd: no tunnel to hostd\n"},
		{"malformed exit", "gt", [][]byte{frame(wire.RelayFrameExit, `{"code":300}`)}, ExitUnavailable, "", "gt: hostd sent a malformed exit status\n"},
		{"connection lost", "gt", [][]byte{frame(wire.RelayFrameStdout, "partial")}, ExitUnavailable, "partial", "gt: lost the connection to gt-agent before the command finished (EOF)\n"},
	}
	wd, _ := os.Getwd()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			socket, got := agent(t, tc.frames...)
			var stdout, stderr bytes.Buffer
			sh := Shim{Name: tc.shim, Socket: socket, Stdin: strings.NewReader("typed input"), Stdout: &stdout, Stderr: &stderr}
			code := sh.Run([]string{"mail", "send", "--to=mayor"})
			if code != tc.code || stdout.String() != tc.stdout || stderr.String() != tc.stderr {
				t.Errorf("exit %d, stdout %q, stderr %q; want %d, %q, %q", code, stdout.String(), stderr.String(), tc.code, tc.stdout, tc.stderr)
			}
			h := <-got
			var argv, env []string
			for _, a := range h.req.Argv {
				argv = append(argv, string(a))
			}
			for _, e := range h.req.Env {
				env = append(env, string(e))
			}
			if strings.Join(argv, " ") != tc.shim+" mail send --to=mayor" || string(h.req.Cwd) != wd || h.stdin != "typed input" {
				t.Errorf("agent heard argv %q, cwd %q, stdin %q", argv, h.req.Cwd, h.stdin)
			}
			if !slices.Contains(env, "TERM=xterm-test") || slices.ContainsFunc(env, func(e string) bool { return strings.HasPrefix(e, "GT_SECRET=") }) {
				t.Errorf("agent heard environment %q: want TERM and nothing outside the allowlist", env)
			}
		})
	}
}

func TestRunNoAgent(t *testing.T) {
	var stderr bytes.Buffer
	socket := filepath.Join(t.TempDir(), "none.sock")
	sh := Shim{Name: "gt", Socket: socket, Stdin: strings.NewReader(""), Stdout: &bytes.Buffer{}, Stderr: &stderr}
	if code := sh.Run(nil); code != ExitUnavailable {
		t.Errorf("exit %d, want %d", code, ExitUnavailable)
	}
	if want := "gt: gt-agent is not running (cannot connect to " + socket; !strings.HasPrefix(stderr.String(), want) || !strings.HasSuffix(stderr.String(), "start it with 'gt-agent up'\n") {
		t.Errorf("stderr %q, want it to say the agent is not running", stderr.String())
	}
}

func TestSocketPath(t *testing.T) {
	tests := []struct {
		env, want string
	}{
		{"", DefaultSocket},
		{"/tmp/elsewhere.sock", "/tmp/elsewhere.sock"},
	}
	for _, tc := range tests {
		t.Setenv(SocketEnv, tc.env)
		if got := SocketPath(); got != tc.want {
			t.Errorf("%s=%q: SocketPath %q, want %q", SocketEnv, tc.env, got, tc.want)
		}
	}
}
