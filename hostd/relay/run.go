package relay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/polecat-sidecar/sidecar/hostd/limits"
	"github.com/polecat-sidecar/sidecar/hostd/relay/grammar"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// allowedSignals are the signals a shim may forward.
var allowedSignals = map[syscall.Signal]bool{syscall.SIGINT: true, syscall.SIGTERM: true, syscall.SIGHUP: true}

// run starts the command in its own process group and pumps its streams
// until it exits. It kills the whole group when the shim is gone (the
// agent says so, the stream ends before the shim closed stdin, or the
// output cannot be delivered), when the polecat's tunnel ends, when the
// command stops reading a full stdin budget, on the timeout, and when
// hostd shuts down.
func (s *Service) run(ctx context.Context, tunnelDone <-chan struct{}, bin string, id wire.Identity, req wire.RelayRequest, line grammar.Parsed,
	fr *wire.RelayFrameReader, w *wire.RelayFrameWriter) (wire.RelayExit, error) {
	argv := make([]string, len(req.Argv))
	for i, a := range req.Argv {
		argv[i] = string(a)
	}
	c, err := s.prepare(id, req, line)
	if err != nil {
		return wire.RelayExit{}, err
	}
	p, err := startProcess(bin, argv, c)
	if err != nil {
		return wire.RelayExit{}, err
	}
	s.trace(ctx, id, "started")
	stop := make(chan error, 3) // why the command must be killed: input, output, output
	var pumps sync.WaitGroup
	for _, o := range []struct {
		r   *os.File
		typ byte
	}{{p.stdout, wire.RelayFrameStdout}, {p.stderr, wire.RelayFrameStderr}} {
		pumps.Add(1)
		go func() {
			defer pumps.Done()
			if err := w.Copy(o.typ, o.r); err != nil {
				stop <- fmt.Errorf("the shim is gone: delivering output failed: %w", err)
				_, _ = io.Copy(io.Discard, o.r) // keep the command from blocking until it is killed
			}
		}()
	}
	stdin := newStdinQueue(s.cfg.MaxStdinBuffer, s.cfg.StdinStall)
	go stdin.feed(p.stdin)
	go s.pumpInput(fr, p, stdin, stop)

	var timeout <-chan time.Time
	if s.cfg.Timeout > 0 {
		t := time.NewTimer(s.cfg.Timeout)
		defer t.Stop()
		timeout = t.C
	}
	waited := make(chan error, 1)
	go func() { waited <- p.cmd.Wait() }()
	var killedFor error
	select {
	case <-waited:
	case err := <-stop:
		killedFor = err
	case <-tunnelDone:
		killedFor = errors.New("the polecat's tunnel ended")
	case <-timeout:
		killedFor = fmt.Errorf("command killed after the relay timeout of %v", s.cfg.Timeout)
	case <-ctx.Done():
		killedFor = errors.New("hostd is shutting down")
	}
	s.trace(ctx, id, "exited")
	if killedFor != nil {
		if errors.Is(killedFor, errStdinStalled) {
			limits.Hit(limits.RelayStdin)
		}
		p.kill(syscall.SIGKILL)
		<-waited
	}
	stdin.abandon()
	_ = p.stdin.Close()
	p.finishOutput(&pumps)
	if killedFor != nil {
		return wire.RelayExit{}, fmt.Errorf("killed the command's process group: %w", killedFor)
	}
	return exitOf(p.cmd.ProcessState), nil
}

// pumpInput reads the shim's frames: stdin, its end, signals, and the
// agent's word that the shim is gone. The stream ending before the shim
// said its stdin ended means the shim is gone too; after that, it is the
// half-close the protocol allows, and the command runs on.
func (s *Service) pumpInput(fr *wire.RelayFrameReader, p *process, stdin *stdinQueue, stop chan<- error) {
	stdinClosed := false
	for {
		typ, payload, err := fr.Next()
		if err != nil {
			if errors.Is(err, io.EOF) && stdinClosed {
				return
			}
			stop <- fmt.Errorf("the shim is gone: the relay stream ended: %w", err)
			return
		}
		switch typ {
		case wire.RelayFrameStdin:
			if err := stdin.push(payload); err != nil {
				stop <- err
				return
			}
		case wire.RelayFrameStdinClose:
			stdinClosed = true
			stdin.end()
		case wire.RelayFrameSignal:
			if len(payload) == 1 && allowedSignals[syscall.Signal(payload[0])] {
				p.kill(syscall.Signal(payload[0]))
			}
		case wire.RelayFrameGone:
			stop <- errors.New("the shim is gone")
			return
		}
	}
}

// exitOf is the exit status as a shell shows it.
func exitOf(ps *os.ProcessState) wire.RelayExit {
	ws, ok := ps.Sys().(syscall.WaitStatus)
	if ok && ws.Signaled() {
		return wire.RelayExit{Code: 128 + int(ws.Signal()), Signal: int(ws.Signal())}
	}
	return wire.RelayExit{Code: ps.ExitCode()}
}
