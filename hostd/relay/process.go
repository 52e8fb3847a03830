package relay

import (
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/polecat-sidecar/sidecar/hostd/confine"
)

// process is a relayed command in its own process group, with pipes whose
// parent ends we hold.
type process struct {
	cmd            *exec.Cmd
	stdin          *os.File
	stdout, stderr *os.File
}

// startProcess starts bin as l says, in a new process group.
func startProcess(bin string, argv []string, l launch) (*process, error) {
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd := &exec.Cmd{
		Path: bin, Args: argv, Dir: l.dir, Env: l.env,
		Stdin: inR, Stdout: outW, Stderr: errW,
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true},
	}
	if l.policy != nil {
		err = confine.Start(cmd, *l.policy)
	} else {
		err = cmd.Start()
	}
	for _, f := range []*os.File{inR, outW, errW} {
		f.Close() // the child has its own copies
	}
	if err != nil {
		for _, f := range []*os.File{inW, outR, errR} {
			f.Close()
		}
		return nil, fmt.Errorf("starting %s: %w", bin, err)
	}
	return &process{cmd: cmd, stdin: inW, stdout: outR, stderr: errR}, nil
}

// kill signals the whole process group.
func (p *process) kill(sig syscall.Signal) {
	_ = syscall.Kill(-p.cmd.Process.Pid, sig)
}

// outputGrace is how long output is still collected after the command
// exits, for grandchildren that hold its stdout.
const outputGrace = 2 * time.Second

// finishOutput waits for the output pumps to drain, at most outputGrace
// after the command exited (a grandchild may still hold the pipes), then
// closes our ends.
func (p *process) finishOutput(pumps *sync.WaitGroup) {
	done := make(chan struct{})
	go func() { pumps.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(outputGrace):
		_ = p.stdout.SetReadDeadline(time.Now())
		_ = p.stderr.SetReadDeadline(time.Now())
		<-done
	}
	p.stdout.Close()
	p.stderr.Close()
}
