// Package statedir gives one gt-agent at a time its state directory: the
// certificate, what hostd's data channel last exchanged, the delivered
// nudges. Two agents sharing one would skip the data fetch, share nudge ids
// and, worse, take the other's base for their own, so the running agent
// holds an exclusive lock on a file inside it for as long as it lives.
package statedir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// LockName is the file inside the state directory that the running agent
// holds locked (flock, so the kernel releases it when the process ends,
// however it ends).
const LockName = "gt-agent.lock"

// ErrInUse is returned by Lock when another process holds the directory.
var ErrInUse = errors.New("another gt-agent is using it")

// Held is a state directory this process holds.
type Held struct{ f *os.File }

// Lock creates dir (0700) when it is missing and takes an exclusive lock
// on its LockName without waiting. The lock is held until Release or the
// end of the process; the file descriptor is not inherited by the
// processes the agent starts (Go opens files close-on-exec).
func Lock(dir string) (*Held, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating state directory %s: %w", dir, err)
	}
	p := filepath.Join(dir, LockName)
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening %s to lock the state directory: %w", p, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("state directory %s: %w", dir, ErrInUse)
		}
		return nil, fmt.Errorf("locking %s (the state directory must be on a filesystem with flock): %w", p, err)
	}
	return &Held{f: f}, nil
}

// Release gives the directory up.
func (h *Held) Release() error { return h.f.Close() }
