package accept

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

func TestBackoff(t *testing.T) {
	for _, tc := range []struct {
		n    int
		want time.Duration
	}{
		{0, 5 * time.Millisecond},
		{1, 10 * time.Millisecond},
		{4, 80 * time.Millisecond},
		{7, 640 * time.Millisecond},
		{8, time.Second},
		{1000, time.Second},
	} {
		if got := Backoff(tc.n); got != tc.want {
			t.Errorf("Backoff(%d) = %v, want %v", tc.n, got, tc.want)
		}
	}
}

// failing is a real listener whose first n accepts fail with EMFILE.
type failing struct {
	net.Listener
	n atomic.Int32
}

func (f *failing) Accept() (net.Conn, error) {
	if f.n.Add(-1) >= 0 {
		return nil, &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", syscall.EMFILE)}
	}
	return f.Listener.Accept()
}

func listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln
}

// TestServeRetries: failed accepts are counted and retried after the
// backoff, and the loop goes on serving.
func TestServeRetries(t *testing.T) {
	ln := &failing{Listener: listen(t)}
	ln.n.Store(4)
	var failed atomic.Int32
	served := make(chan net.Conn, 1)
	ctx, cancel := context.WithCancel(context.Background())
	ended := make(chan error, 1)
	start := time.Now()
	go func() {
		loop := Loop{Name: "test", Failed: func(err error) {
			if !errors.Is(err, syscall.EMFILE) {
				t.Errorf("failed with %v", err)
			}
			failed.Add(1)
		}}
		ended <- loop.Serve(ctx, ln, func(c net.Conn) { served <- c })
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	select {
	case s := <-served:
		s.Close()
	case <-time.After(5 * time.Second):
		t.Fatal("no connection served after the failed accepts")
	}
	// Four failures wait 5+10+20+40 ms before the accept that succeeds.
	if n := failed.Load(); n != 4 {
		t.Errorf("%d failures heard, want 4", n)
	}
	if d := time.Since(start); d < 75*time.Millisecond {
		t.Errorf("served after %v: the failed accepts were not backed off", d)
	}
	cancel()
	ln.Close()
	if err := <-ended; err != nil {
		t.Errorf("Serve after ctx ended: %v, want nil", err)
	}
}

// TestServeClosed: a listener closed by someone else ends the loop with
// net.ErrClosed.
func TestServeClosed(t *testing.T) {
	ln := listen(t)
	ended := make(chan error, 1)
	go func() { ended <- (Loop{}).Serve(context.Background(), ln, func(c net.Conn) { c.Close() }) }()
	ln.Close()
	select {
	case err := <-ended:
		if !errors.Is(err, net.ErrClosed) {
			t.Errorf("Serve: %v, want net.ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not end when its listener was closed")
	}
}

// TestServeOutOfFiles runs a loop in a process whose file descriptors
// are used up: accepts fail with EMFILE, and once one descriptor is
// freed the waiting connection is served.
func TestServeOutOfFiles(t *testing.T) {
	if os.Getenv("ACCEPT_TEST_CHILD") == "1" {
		outOfFiles(t)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestServeOutOfFiles$", "-test.v")
	cmd.Env = append(os.Environ(), "ACCEPT_TEST_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
}

// outOfFiles is TestServeOutOfFiles's child.
func outOfFiles(t *testing.T) {
	ln := listen(t)
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	lim.Cur = 64
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	var filler []*os.File
	for {
		f, err := os.Open(os.DevNull)
		if err != nil {
			if !errors.Is(err, syscall.EMFILE) {
				t.Fatal(err)
			}
			break
		}
		filler = append(filler, f)
	}
	defer func() {
		for _, f := range filler {
			f.Close()
		}
	}()
	var failed atomic.Int32
	served := make(chan net.Conn, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go (Loop{Name: "test", Failed: func(err error) {
		if !errors.Is(err, syscall.EMFILE) {
			t.Errorf("failed with %v", err)
		}
		if failed.Add(1) == 3 {
			filler[len(filler)-1].Close() // the fourth accept has a descriptor
		}
	}}).Serve(ctx, ln, func(c net.Conn) {
		if n := failed.Load(); n != 3 {
			t.Errorf("served after %d failures, want 3", n)
		}
		served <- c
	})
	select {
	case s := <-served:
		s.Close()
	case <-time.After(10 * time.Second):
		t.Fatal("no connection served once a descriptor was freed")
	}
}
