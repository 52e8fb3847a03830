// Package limited bounds what hostd's git code keeps of text it did not
// write: a git process's error output, and what a polecat sent, quoted
// back in an error.
package limited

import "io"

// Writer keeps the first N bytes written to W and drops the rest.
type Writer struct {
	W io.Writer
	N int
}

// Write keeps what fits and reports all of p written.
func (l *Writer) Write(p []byte) (int, error) {
	if l.N > 0 {
		k := min(len(p), l.N)
		_, _ = l.W.Write(p[:k])
		l.N -= k
	}
	return len(p), nil
}

// Truncate cuts s to 64 bytes for an error message.
func Truncate(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}
