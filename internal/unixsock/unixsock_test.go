package unixsock

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/polecat-sidecar/sidecar/internal/unixsock/unixsocktest"
)

func TestListen(t *testing.T) {
	dir := filepath.Join(unixsocktest.Dir(t), "run")
	path := filepath.Join(dir, "agent.sock")
	ln, err := Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]os.FileMode{dir: 0o700, path: 0o600} {
		st, err := os.Stat(p)
		if err != nil || st.Mode().Perm() != want {
			t.Errorf("%s: mode %v (%v), want %v", p, st.Mode().Perm(), err, want)
		}
	}
	go func() {
		if c, err := ln.Accept(); err == nil {
			c.Close()
		}
	}()
	if _, err := Listen(path); !errors.Is(err, ErrInUse) {
		t.Errorf("second Listen on a live socket: %v, want ErrInUse", err)
	}
	ln.Close()

	// A socket file nobody answers on (a crashed owner) is replaced.
	stale, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	stale.SetUnlinkOnClose(false)
	stale.Close()
	ln2, err := Listen(path)
	if err != nil {
		t.Fatalf("stale socket not replaced: %v", err)
	}
	ln2.Close()
}

func TestListenKeepsExistingDirectoryMode(t *testing.T) {
	dir := unixsocktest.Dir(t) // this test's name would push a socket under macOS's $TMPDIR past the limit
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	ln, err := Listen(filepath.Join(dir, "s.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if st, _ := os.Stat(dir); st.Mode().Perm() != 0o755 {
		t.Errorf("existing directory's mode changed to %v", st.Mode().Perm())
	}
}

// TestListenPathTooLong: a path longer than the system takes is refused
// with an error naming both lengths, not the bare "invalid argument" of
// bind(2); one at the limit listens.
func TestListenPathTooLong(t *testing.T) {
	dir := t.TempDir()
	pad := func(n int) string { // a path of n bytes in dir
		return filepath.Join(dir, strings.Repeat("s", n-len(dir)-1))
	}
	ln, err := Listen(pad(MaxPath))
	if err != nil {
		t.Fatalf("a path of %d bytes, the limit: %v", MaxPath, err)
	}
	ln.Close()
	long := pad(MaxPath + 1)
	_, err = Listen(long)
	if want := fmt.Sprintf("socket path too long: %s is %d bytes, and this system takes at most %d: use a shorter directory", long, MaxPath+1, MaxPath); !errors.Is(err, ErrTooLong) || err.Error() != want {
		t.Fatalf("a path of %d bytes: %v, want %q", MaxPath+1, err, want)
	}
}
