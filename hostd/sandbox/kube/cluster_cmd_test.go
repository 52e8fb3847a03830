//go:build k8s

package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/polecat-sidecar/sidecar/hostd/e2e"
	"github.com/polecat-sidecar/sidecar/hostd/sandbox"
	"github.com/polecat-sidecar/sidecar/hostd/state"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// TestCommands: with sandbox.runtime kubernetes in the town's config.yaml,
// hostd doctor checks the cluster, hostd serve's reaper removes the
// sandbox of a polecat whose directory is gone, and hostd nuke the one it
// is told to.
func TestCommands(t *testing.T) {
	c := newCluster(t)
	tw := e2e.NewTown(t)
	config := fmt.Sprintf(`sandbox:
  runtime: kubernetes
  image: %s
  reap: 1s
  kubernetes:
    namespace: %s
    image_pull_policy: Never
    storage_class: %s
    storage_size: 1Gi
`, os.Getenv("K8S_POLECAT_IMAGE"), c.ns, storageClass)
	if err := os.MkdirAll(filepath.Dir(state.For(tw.Dir).Config()), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(state.For(tw.Dir).Config(), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	_, url := c.hostdWith(tw)

	out, _ := tw.Try("doctor", "--json")
	var report struct {
		Checks []struct{ Check, Status, Message string }
	}
	if err := json.Unmarshal([]byte(out), &report); err != nil {
		t.Fatalf("doctor --json: %v\n%s", err, out)
	}
	for _, l := range report.Checks {
		if (l.Check == "runtime" || l.Check == "image") && l.Status != "ok" {
			t.Errorf("doctor's %s: %s %s", l.Check, l.Status, l.Message)
		}
		if l.Check == "runtime" && !strings.Contains(l.Message, "namespace "+c.ns+" is there") {
			t.Errorf("doctor's runtime: %s", l.Message)
		}
	}

	r := c.runtime(c.cfg)
	ctx := context.Background()
	spec := sandbox.Spec{Image: os.Getenv("K8S_POLECAT_IMAGE"), URL: url, Agent: "/usr/local/bin/gt-agent"}
	nuked, kept := wire.Identity{Rig: "gastown", Name: "nux"}, wire.Identity{Rig: "gastown", Name: "slit"}
	if err := os.MkdirAll(filepath.Join(tw.Dir, "gastown", "polecats", "slit"), 0o755); err != nil {
		t.Fatal(err)
	}
	home, err := sandbox.Home(tw.Dir, kept)
	if err != nil {
		t.Fatal(err)
	}
	for id, home := range map[wire.Identity]string{nuked: "", kept: home} {
		if err := r.Create(ctx, spec, tw.Dir, id, home, "t"); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	c.wait(time.Minute, "the reaper removing the sandbox of the polecat whose directory is gone", func() (bool, string) {
		err := r.pods.exists(ctx, PodName(ObjectName(sandbox.Name(nuked))))
		info, ierr := r.Inspect(ctx, sandbox.Name(nuked))
		return notFound(err) && ierr == nil && !info.Exists, fmt.Sprintf("%+v, %v; pod: %v", info, ierr, err)
	})
	t.Logf("timing: the reaper removed a nuked polecat's sandbox in %v", time.Since(start).Round(time.Millisecond))
	c.gone(r, sandbox.Name(nuked))
	if info, err := r.Inspect(ctx, sandbox.Name(kept)); err != nil || !info.Exists {
		t.Fatalf("the reaper took the sandbox of a polecat whose directory is there: %+v, %v", info, err)
	}

	if out := tw.Run("nuke", kept.String()); !strings.Contains(out, "removed "+sandbox.Name(kept)) {
		t.Errorf("hostd nuke: %s", out)
	}
	c.gone(r, sandbox.Name(kept))
}
