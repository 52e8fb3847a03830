package unixsocktest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/polecat-sidecar/sidecar/internal/unixsock"
)

// TestDir: the directory exists, leaves room for a town's control socket
// whatever $TMPDIR is (macOS's is long), and is removed when the test
// ends.
func TestDir(t *testing.T) {
	t.Setenv("TMPDIR", "/tmp/"+filepath.Base(t.TempDir())+"/var/folders/zz/zyxvpxvq6csfxvn_n0000000000000/T") // macOS's shape
	var dir string
	t.Run("use", func(t *testing.T) {
		dir = Dir(t)
		sock := filepath.Join(dir, ".runtime", "hostd", "hostd.sock")
		if err := unixsock.CheckPath(sock); err != nil || len(sock) > 60 {
			t.Errorf("%s: %v", sock, err)
		}
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			t.Errorf("%s: %v", dir, err)
		}
	})
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("%s left behind: %v", dir, err)
	}
}
