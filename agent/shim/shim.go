// Package shim is the gt and bd commands' side of the relay: it connects
// to the agent's unix socket, sends the command line, its allowed
// environment and working directory, streams stdin, stdout and stderr,
// forwards signals, and exits with the host command's status. It needs
// only the standard library and tunnel/wire, and of those not net, nor
// encoding/json's encoder and decoder (the socket is two system calls, the
// request and exit status are written and read by hand in tunnel/wire;
// encoding/json's initialisation is linked all the same, through
// tunnel/wire's other messages), so the gt program built from it
// (agent/gt) starts as fast as a Go program can; gt-agent uses it too when
// invoked as gt or bd, and for gt-agent exec.
package shim

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"

	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// DefaultSocket is where the agent listens for shims unless GT_AGENT_SOCKET
// or --socket says otherwise.
const DefaultSocket = "/run/gt-agent/agent.sock"

// SocketEnv names the environment variable that overrides DefaultSocket,
// for the agent and the shim alike.
const SocketEnv = "GT_AGENT_SOCKET"

// ExitUnavailable is the shim's exit status when the command could not be
// relayed at all (agent not running, tunnel down, command refused), as ssh
// uses 255.
const ExitUnavailable = 255

// HostLabel begins what the shim prints for an error hostd sent rather
// than the command (a refusal, a command hostd could not run), after the
// command's name: "gt: hostd (on the host): ...". The command's own
// output is passed on as it is.
const HostLabel = "hostd (on the host): "

// Shim relays one gt or bd command through the agent at Socket.
type Shim struct {
	// Name is the command, "gt" or "bd".
	Name string
	// Socket is the agent's relay socket.
	Socket string
	// Stdin, Stdout and Stderr are the command's streams.
	Stdin          io.Reader
	Stdout, Stderr io.Writer
}

// SocketPath is the socket the shim uses: $GT_AGENT_SOCKET or
// DefaultSocket.
func SocketPath() string {
	if p := os.Getenv(SocketEnv); p != "" {
		return p
	}
	return DefaultSocket
}

// Run relays args and returns the exit status to exit with: the host
// command's, or ExitUnavailable with one line on stderr saying why.
func (sh *Shim) Run(args []string) int {
	c, err := dialUnix(sh.Socket)
	if err != nil {
		return sh.fail("gt-agent is not running (cannot connect to %s: %v); start it with 'gt-agent up'", sh.Socket, err)
	}
	defer c.Close()
	req, err := wire.EncodeRelayRequest(sh.request(args))
	if err != nil {
		return sh.fail("%v", err)
	}
	w := wire.NewRelayFrameWriter(c)
	if err := w.Frame(wire.RelayFrameRequest, req); err != nil {
		return sh.fail("sending the command to gt-agent: %v", err)
	}
	// Signals are forwarded once the request is on its way. Installing the
	// handler starts a thread, so it is done beside the round trip; the
	// command's first output waits for it, so that a Ctrl-C pressed once
	// the command shows anything reaches the command, never the shim's
	// default handling (which ended the shim alone).
	sigs := make(chan os.Signal, 4)
	handling := make(chan struct{})
	defer func() {
		<-handling
		signal.Stop(sigs)
		close(sigs) // no signal comes after Stop: the forwarding ends
	}()
	go func() {
		signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
		close(handling)
		for s := range sigs {
			_ = w.Frame(wire.RelayFrameSignal, []byte{byte(s.(syscall.Signal))})
		}
	}()
	go sh.pumpStdin(w)

	fr := wire.NewRelayFrameReader(c)
	attached := false // from then on, frames are hostd's
	for {
		typ, payload, err := fr.Next()
		if err != nil {
			return sh.fail("lost the connection to gt-agent before the command finished (%v)", err)
		}
		switch typ {
		case wire.RelayFrameAttached:
			attached = true
		case wire.RelayFrameStdout:
			<-handling
			_, _ = sh.Stdout.Write(payload)
		case wire.RelayFrameStderr:
			<-handling
			_, _ = sh.Stderr.Write(payload)
		case wire.RelayFrameExit:
			e, err := wire.ParseRelayExit(payload)
			if err != nil || e.Code < 0 || e.Code > 255 {
				return sh.fail("hostd sent a malformed exit status")
			}
			return e.Code
		case wire.RelayFrameError:
			reason := strings.ToValidUTF8(string(payload), "?")
			if attached {
				// hostd's own words (a refusal, a command it could not
				// run), told apart from the command's stderr.
				return sh.fail("%s%s", HostLabel, reason)
			}
			return sh.fail("%s", reason)
		}
	}
}

// request is what the host needs: argv, where we are, and the
// allow-listed environment.
func (sh *Shim) request(args []string) wire.RelayRequest {
	req := wire.RelayRequest{Argv: [][]byte{[]byte(sh.Name)}}
	for _, a := range args {
		req.Argv = append(req.Argv, []byte(a))
	}
	if wd, err := os.Getwd(); err == nil {
		req.Cwd = []byte(wd)
	}
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if slices.Contains(wire.RelayEnv, k) {
			req.Env = append(req.Env, []byte(kv))
		}
	}
	return req
}

// pumpStdin sends stdin as it arrives, then its end.
func (sh *Shim) pumpStdin(w *wire.RelayFrameWriter) {
	if w.Copy(wire.RelayFrameStdin, sh.Stdin) == nil {
		_ = w.Frame(wire.RelayFrameStdinClose, nil)
	}
}

func (sh *Shim) fail(format string, args ...any) int {
	fmt.Fprintf(sh.Stderr, "%s: %s\n", sh.Name, fmt.Sprintf(format, args...))
	return ExitUnavailable
}

// dialUnix connects to the unix socket at path with the system calls
// themselves (the net package would cost the shim's start more than the
// rest of it).
func dialUnix(path string) (*os.File, error) {
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	for {
		err = syscall.Connect(fd, &syscall.SockaddrUnix{Name: path})
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		syscall.Close(fd)
		return nil, err
	}
	return os.NewFile(uintptr(fd), path), nil
}
