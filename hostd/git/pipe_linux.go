package git

import (
	"os"

	"golang.org/x/sys/unix"
)

// growPipe asks for a pipe buffer of size bytes (best effort: Linux's
// default is 64 KiB).
func growPipe(f *os.File, size int) {
	if rc, err := f.SyscallConn(); err == nil {
		_ = rc.Control(func(fd uintptr) { _, _ = unix.FcntlInt(fd, unix.F_SETPIPE_SZ, size) })
	}
}
