package unixsock

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"testing"
)

func TestListen(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
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
	dir := t.TempDir()
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
