package git

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/polecat-sidecar/sidecar/hostd/git/internal/limited"
)

// run runs git in its own process group, streaming stdin and stdout. If
// the request goes away, git gets SIGTERM (so it can remove its locks),
// then SIGKILL.
func (s *Service) run(ctx context.Context, env []string, stdin io.Reader, w http.ResponseWriter, args ...string) error {
	name := "git"
	for i := 0; i < len(args); i++ {
		if args[i] == "-c" {
			i++
		} else {
			name = "git " + args[i]
			break
		}
	}
	// git's stdout is a pipe of our own, read here in chunks of whatever
	// it has written, up to stdoutChunk: each chunk costs an HTTP chunk
	// header, a flush and a burst of packets on the tunnel, which at
	// exec's 32 KiB made a third of hostd's work in a clone.
	pr, pw, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("%s: making its stdout pipe: %w", name, err)
	}
	defer pr.Close()
	growPipe(pr, stdoutChunk)
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Env = env
	cmd.Stdin = stdin
	cmd.Stdout = pw
	var stderr strings.Builder
	cmd.Stderr = &limited.Writer{W: &stderr, N: 4096}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) }
	cmd.WaitDelay = 5 * time.Second
	err = cmd.Start()
	pw.Close()
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	// As exec's WaitDelay would: once the request is gone, stop reading
	// after the delay even if something git started still holds the pipe.
	stop := context.AfterFunc(ctx, func() { time.AfterFunc(cmd.WaitDelay, func() { pr.Close() }) })
	defer stop()
	buf := chunkPool.Get().(*[]byte)
	_, copyErr := io.CopyBuffer(flushWriter{w: w, rc: http.NewResponseController(w), idle: s.cfg.IdleTimeout}, onlyReader{pr}, *buf)
	chunkPool.Put(buf)
	pr.Close() // a reader gone: git gets EPIPE rather than waiting on a full pipe
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("%s: %w: %s", name, err, strings.TrimSpace(stderr.String()))
	}
	if copyErr != nil {
		return fmt.Errorf("%s: sending its output: %w", name, copyErr)
	}
	return nil
}

// stdoutChunk is the most of git's output sent as one chunk, and the size
// of its pipe.
const stdoutChunk = 256 << 10

// chunkPool keeps the buffers git's output is read into.
var chunkPool = sync.Pool{New: func() any { b := make([]byte, stdoutChunk); return &b }}

// onlyReader hides a file's WriteTo, so that io.CopyBuffer uses the
// buffer it is given.
type onlyReader struct{ r io.Reader }

func (o onlyReader) Read(p []byte) (int, error) { return o.r.Read(p) }

// flushWriter sends each chunk git writes at once: packs stream, they are
// never held whole. A reader that takes nothing for idle ends the request.
type flushWriter struct {
	w    http.ResponseWriter
	rc   *http.ResponseController
	idle time.Duration
}

func (f flushWriter) Write(p []byte) (int, error) {
	_ = f.rc.SetWriteDeadline(time.Now().Add(f.idle))
	n, err := f.w.Write(p)
	if err == nil {
		err = f.rc.Flush()
	}
	return n, err
}
