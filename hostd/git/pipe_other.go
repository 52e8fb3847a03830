//go:build !linux

package git

import "os"

// growPipe does nothing where pipes cannot be resized (macOS sizes its
// pipes itself, up to 64 KiB).
func growPipe(*os.File, int) {}
