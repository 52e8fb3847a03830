package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestCheckBinary: real programs built for each platform pass as their own
// and fail as another's; a dynamically linked ELF fails as not static.
func TestCheckBinary(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "main.go")
	if err := os.WriteFile(src, []byte("package main\n\nfunc main() {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	built := map[string][]byte{}
	for _, platform := range []string{"linux/amd64", "linux/arm64", "darwin/arm64"} {
		goos, goarch, _ := strings.Cut(platform, "/")
		out := filepath.Join(dir, goos+"-"+goarch)
		cmd := exec.Command("go", "build", "-o", out, src)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+goos, "GOARCH="+goarch)
		if msg, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("building for %s: %v\n%s", platform, err, msg)
		}
		data, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		built[platform] = data
	}
	tests := []struct {
		name, binary, goos, goarch string
		err                        string // "" for none
	}{
		{"linux/amd64", "linux/amd64", "linux", "amd64", ""},
		{"linux/arm64", "linux/arm64", "linux", "arm64", ""},
		{"darwin/arm64", "darwin/arm64", "darwin", "arm64", ""},
		{"arm64 as amd64", "linux/arm64", "linux", "amd64", "ELF for ELFCLASS64 EM_AARCH64, want amd64"},
		{"darwin as linux", "darwin/arm64", "linux", "arm64", "not an ELF file"},
		{"linux as darwin", "linux/arm64", "darwin", "arm64", "not a Mach-O file"},
		{"darwin/arm64 as darwin/amd64", "darwin/arm64", "darwin", "amd64", "Mach-O for CpuArm64, want amd64"},
		{"an unknown GOOS", "linux/amd64", "windows", "amd64", "no check for GOOS windows"},
	}
	if runtime.GOOS == "linux" && runtime.GOARCH == "amd64" {
		if sh, err := os.ReadFile("/bin/sh"); err == nil { // Debian's, linked with libc
			built["/bin/sh"] = sh
			tests = append(tests, struct{ name, binary, goos, goarch, err string }{
				"a dynamically linked ELF", "/bin/sh", "linux", "amd64", "dynamically linked"})
		}
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := checkBinary(built[tc.binary], tc.goos, tc.goarch)
			switch {
			case tc.err == "" && err != nil:
				t.Errorf("error %v", err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Errorf("error %v, want one containing %q", err, tc.err)
			}
		})
	}
}
