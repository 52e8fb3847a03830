//go:build k8s

package kube

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/polecat-sidecar/sidecar/hostd/e2e"
	"github.com/polecat-sidecar/sidecar/hostd/sandbox"
	"github.com/polecat-sidecar/sidecar/hostd/state"
	"github.com/polecat-sidecar/sidecar/tunnel/tunneltest"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// TestHostdRun: hostd run, Gas Town's exec wrapper, with sandbox.runtime
// kubernetes: the first session makes the polecat's sandbox on the
// cluster, its agent joins (the token's Secret then dropped), clones the
// rig on the polecat's branch and runs the command, and hostd run exits
// with its status; the next session starts in the same sandbox, with the
// first one's file there.
func TestHostdRun(t *testing.T) {
	c := newCluster(t)
	g := e2e.SeedGitTown(t)
	addr := net.JoinHostPort(c.nodeIP, tunneltest.FreePort(t, c.nodeIP))
	g.Hostd, g.Addr = g.ServeOn(addr, "--grace", "10m"), addr
	wt := filepath.Join(g.Dir, "gastown", "polecats", "toast", "gastown")
	g.Git(t, g.Repo, "worktree", "add", "-q", "-b", "polecat/toast-1", wt, "main")
	id := wire.Identity{Rig: "gastown", Name: "toast"}
	dir := c.volume(id)
	config := fmt.Sprintf("sandbox:\n  runtime: kubernetes\n  image: %s\n  url: https://%s\n  kubernetes:\n    namespace: %s\n    image_pull_policy: Never\n    storage_class: %s\n    storage_size: 1Gi\n",
		os.Getenv("K8S_POLECAT_IMAGE"), addr, c.ns, storageClass)
	if err := os.WriteFile(state.For(g.Dir).Config(), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	run := func(script string, want int) string {
		t.Helper()
		cmd := exec.Command(filepath.Join(e2e.BinDir, "hostd"), "--town", g.Dir, "run", "--", "/bin/sh", "-c", script)
		cmd.Env = append(os.Environ(), "GT_RIG=gastown", "GT_POLECAT=toast", "HOSTD_LIVENESS_BEAT_INTERVAL=1s")
		start := time.Now()
		out, _ := cmd.CombinedOutput()
		if got := cmd.ProcessState.ExitCode(); got != want {
			t.Logf("%s", c.kubectl("get", "pods", "-o", "yaml"))
			t.Logf("%s", c.kubectl("get", "events"))
			t.Fatalf("hostd run exited with %d, want %d; it printed:\n%s", got, want, out)
		}
		t.Logf("timing: hostd run %q: %v", script, time.Since(start).Round(time.Millisecond))
		return string(out)
	}
	out := run(`echo "$GT_POLECAT on $(git branch --show-current)" > seen; exit 7`, 7)
	if !strings.Contains(out, "hostd run: cloned the rig into /work/gastown on polecat/toast-1") {
		t.Errorf("hostd run did not say it cloned the rig:\n%s", out)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "gastown", "seen")); err != nil || string(b) != "toast on polecat/toast-1\n" {
		t.Errorf("the session's file on the claim: %q, %v", b, err)
	}
	r := c.runtime(c.cfg)
	if err := r.secrets.exists(t.Context(), ObjectName(sandbox.Name(id))); !notFound(err) {
		t.Errorf("the join token's Secret after the agent joined: %v", err)
	}
	run(`test -e seen || exit 9; exit 0`, 0)
}
