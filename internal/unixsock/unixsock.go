// Package unixsock opens unix sockets only their owner can use: the
// socket 0600 in a directory made 0700, replacing a stale socket that a
// crashed process left behind but never one that still answers.
package unixsock

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// ErrInUse is returned when another process already answers on the
// socket; callers say which program that is.
var ErrInUse = errors.New("socket is in use by a running process")

// MaxPath is the longest socket path this system takes: sun_path less
// its terminating NUL, 107 bytes on Linux and 103 on macOS, whose
// temporary directories are long.
var MaxPath = len(syscall.RawSockaddrUnix{}.Path) - 1

// ErrTooLong is a socket path longer than MaxPath, which the system
// refuses with a bare "invalid argument".
var ErrTooLong = errors.New("socket path too long")

// CheckPath says why path cannot name a socket here, if it is too long.
func CheckPath(path string) error {
	if len(path) > MaxPath {
		return fmt.Errorf("%w: %s is %d bytes, and this system takes at most %d: use a shorter directory", ErrTooLong, path, len(path), MaxPath)
	}
	return nil
}

// Listen listens on the unix socket at path. A missing parent directory
// is created 0700 (an existing one is left as it is: the caller owns its
// mode); the socket is made 0600 before Listen returns.
func Listen(path string) (net.Listener, error) {
	if err := CheckPath(path); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("creating socket directory for %s: %w", path, err)
	}
	if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
		c.Close()
		return nil, fmt.Errorf("%s: %w", path, ErrInUse)
	}
	_ = os.Remove(path) // a stale socket: nobody answered on it
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("listening on %s: %w", path, err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("securing %s: %w", path, err)
	}
	return ln, nil
}
