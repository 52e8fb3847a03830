package sandbox

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// birth is the inode and, where the filesystem keeps it, the birth time
// of path (statx).
func birth(path string) (string, error) {
	var st unix.Statx_t
	if err := unix.Statx(unix.AT_FDCWD, path, unix.AT_SYMLINK_NOFOLLOW, unix.STATX_INO|unix.STATX_BTIME, &st); err != nil {
		return "", fmt.Errorf("reading %s: %w", path, err)
	}
	if st.Mask&unix.STATX_BTIME == 0 {
		return fmt.Sprint(st.Ino), nil
	}
	return fmt.Sprintf("%d-%d.%09d", st.Ino, st.Btime.Sec, st.Btime.Nsec), nil
}
