package statedir

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestLock(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	first, err := Lock(dir)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("state directory: %v, %v; want it made 0700", fi, err)
	}
	tests := []struct {
		name    string
		release bool
		wantErr error
	}{
		{"held by another open file", false, ErrInUse},
		{"released", true, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.release {
				if err := first.Release(); err != nil {
					t.Fatal(err)
				}
			}
			second, err := Lock(dir)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("second Lock: %v, want %v", err, tc.wantErr)
			}
			if err != nil {
				if want := "state directory " + dir + ": " + ErrInUse.Error(); err.Error() != want {
					t.Errorf("error %q, want %q", err, want)
				}
				return
			}
			_ = second.Release()
		})
	}
}
