package liveness

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/polecat-sidecar/sidecar/heartbeat"
)

// RunAndRecord is the first process in the tmux session the agent starts:
// it runs argv as its child with the terminal and the environment as they
// are, in dir ("" for its own), and when the child ends writes its exit
// status (128+signal for a signal) to statusFile and exits with it. tmux
// cannot be relied on for the status (it can show a pane dead and never
// say why).
func RunAndRecord(statusFile, dir string, argv []string) int {
	// The terminal's Ctrl-C and Ctrl-\ are for the command. Caught, not
	// ignored: an ignored signal would stay ignored in the command too.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGQUIT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Dir = dir
	if err := cmd.Start(); err != nil {
		// Said as shells say it, and with their codes, so that the agent
		// reads it back from the pane (exitReason) into its beats.
		code := heartbeat.ExitCannotRun
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) {
			code = heartbeat.ExitNotFound
			fmt.Fprintf(os.Stderr, "gt-agent: command not found: %s\n", argv[0])
		} else {
			fmt.Fprintf(os.Stderr, "gt-agent: cannot run %s: %v\n", argv[0], err)
		}
		writeStatus(statusFile, code)
		return code
	}
	forwarded := make(chan struct{})
	go func() {
		defer close(forwarded)
		for s := range sigs {
			if s == syscall.SIGTERM || s == syscall.SIGHUP {
				_ = cmd.Process.Signal(s)
			}
		}
	}()
	err := cmd.Wait()
	signal.Stop(sigs)
	close(sigs) // no signal comes after Stop: the forwarding ends
	<-forwarded
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			code = 128 + int(ws.Signal())
		} else {
			code = ee.ExitCode()
		}
	}
	writeStatus(statusFile, code)
	return code
}

// writeStatus records code at path, saying on the pane when it cannot
// (the agent's beats then report the exit without its code).
func writeStatus(path string, code int) {
	tmp := path + ".tmp"
	err := os.WriteFile(tmp, []byte(strconv.Itoa(code)+"\n"), 0o600)
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "gt-agent: recording the exit status %d: %v\n", code, err)
	}
}

// readStatus reads a status written by RunAndRecord.
func readStatus(path string) (int, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	code, err := strconv.Atoi(strings.TrimSpace(string(b)))
	return code, err == nil
}
