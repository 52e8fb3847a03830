package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// BenchmarkShimStart: what a relayed command pays before it relays
// anything, a process's start and exit, with no agent to reach (the shim
// tries the socket once and exits 255):
//
//	impl=shim      bin/gt, the shim program (agent/gt)
//	impl=gtagent   gt-agent invoked as gt (every package of the sidecar initialised)
//	impl=hello     a static Go program that does nothing, built the same way
//	impl=true      /bin/true
func BenchmarkShimStart(b *testing.B) {
	dir := b.TempDir()
	hello := filepath.Join(dir, "hello")
	src := filepath.Join(dir, "main.go")
	if err := os.WriteFile(src, []byte("package main\n\nfunc main() {}\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	build := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", hello, src)
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("%v %s", err, out)
	}
	gtAgentAsGt := filepath.Join(dir, "gt")
	if err := os.Symlink(filepath.Join(BinDir, "gt-agent"), gtAgentAsGt); err != nil {
		b.Fatal(err)
	}
	env := append(os.Environ(), "GT_AGENT_SOCKET="+filepath.Join(dir, "no-agent.sock"))
	for _, c := range []struct{ impl, bin string }{
		{"shim", filepath.Join(BinDir, "gt")}, {"gtagent", gtAgentAsGt}, {"hello", hello}, {"true", "/bin/true"},
	} {
		b.Run("impl="+c.impl, func(b *testing.B) {
			for b.Loop() {
				cmd := exec.Command(c.bin, "status")
				cmd.Env = env
				_ = cmd.Run() // 255 for the shims: no agent
				if cmd.ProcessState == nil {
					b.Fatalf("%s did not run", c.bin)
				}
			}
		})
	}
}
