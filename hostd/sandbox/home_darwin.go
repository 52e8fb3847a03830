package sandbox

import (
	"fmt"
	"syscall"
)

// birth is the inode and the birth time of path.
func birth(path string) (string, error) {
	var st syscall.Stat_t
	if err := syscall.Lstat(path, &st); err != nil {
		return "", fmt.Errorf("reading %s: %w", path, err)
	}
	return fmt.Sprintf("%d-%d.%09d", st.Ino, st.Birthtimespec.Sec, st.Birthtimespec.Nsec), nil
}
