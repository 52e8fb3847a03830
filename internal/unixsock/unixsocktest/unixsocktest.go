// Package unixsocktest gives tests directories short enough for the unix
// sockets made under them on every system.
package unixsocktest

import (
	"os"
	"testing"
)

// Dir is a new temporary directory, removed when the test ends, under a
// short base, so that a socket a few levels below it (a town's
// .runtime/hostd/hostd.sock) stays within unixsock.MaxPath: t.TempDir()
// under macOS's $TMPDIR (/var/folders/<2>/<28>/T/) with the test's name
// leaves too little room.
func Dir(t testing.TB) string {
	t.Helper()
	base := os.TempDir()
	if len(base) > 20 {
		base = "/tmp"
	}
	dir, err := os.MkdirTemp(base, "sidecar-")
	if err != nil {
		t.Fatalf("making a short temporary directory: %v", err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}
