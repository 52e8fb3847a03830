package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkShimStart: what a relayed command pays before it relays
// anything, a process's start and exit, with no agent to reach (the shim
// tries the socket once and exits 255), for each of:
//
//	shim      bin/gt, the shim program (agent/gt)
//	gtagent   gt-agent invoked as gt (every package of the sidecar initialised)
//	hello     a static Go program that does nothing, built the same way
//	true      /bin/true
//
// The four are interleaved, one start of each per iteration in turn, so
// that a machine's changing load falls on all of them alike; each one's
// median is reported as <name>-us.
func BenchmarkShimStart(b *testing.B) {
	dir := b.TempDir()
	hello := buildHello(b)
	gtAgentAsGt := filepath.Join(dir, "gt")
	if err := os.Symlink(filepath.Join(BinDir, "gt-agent"), gtAgentAsGt); err != nil {
		b.Fatal(err)
	}
	env := append(os.Environ(), "GT_AGENT_SOCKET="+filepath.Join(dir, "no-agent.sock"))
	bins := []struct{ name, path string }{
		{"shim", filepath.Join(BinDir, "gt")}, {"gtagent", gtAgentAsGt}, {"hello", hello}, {"true", "/bin/true"},
	}
	took := make([][]float64, len(bins))
	for n := 0; b.Loop(); n++ {
		for k := range bins {
			i := (n + k) % len(bins) // each in every position in turn
			cmd := exec.Command(bins[i].path, "status")
			cmd.Env = env
			t0 := time.Now()
			_ = cmd.Run() // 255 for the shims: no agent
			if cmd.ProcessState == nil {
				b.Fatalf("%s did not run", bins[i].path)
			}
			took[i] = append(took[i], float64(time.Since(t0).Microseconds()))
		}
	}
	for i, c := range bins {
		b.ReportMetric(median(took[i]), c.name+"-us")
	}
}

// buildHello builds a static Go program that does nothing, the way the
// shim is built, and returns its path: what starting any Go client costs.
func buildHello(b *testing.B) string {
	dir := b.TempDir()
	hello := filepath.Join(dir, "hello")
	src := filepath.Join(dir, "main.go")
	if err := os.WriteFile(src, []byte("package main\n\nfunc main() {}\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	build := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", hello, src)
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("building the do-nothing program: %v %s", err, out)
	}
	return hello
}
