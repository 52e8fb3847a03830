package upstream

import (
	"bytes"
	"context"
	"log/slog"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRefreshSkipsCheckedOut: a refresh moves origin's branches into the
// rig's repository but leaves a branch checked out in one of its
// worktrees (Gas Town's refinery/rig has main) where it is, instead of
// failing whole, and never touches a polecat branch.
func TestRefreshSkipsCheckedOut(t *testing.T) {
	town, origin := rigRepos(t)
	repo := filepath.Join(town, "gastown", ".repo.git")
	seed := t.TempDir()
	git := func(args ...string) string {
		t.Helper()
		out, err := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@t"}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "-q", "-b", "main", seed)
	git("-C", seed, "commit", "-q", "--allow-empty", "-m", "first")
	git("-C", seed, "push", "-q", origin, "main", "main:dev", "main:polecat/nux")
	git("-C", repo, "fetch", "-q", origin, "main:main", "dev:dev")
	refinery := filepath.Join(town, "gastown", "refinery", "rig")
	git("-C", repo, "worktree", "add", "-q", refinery, "main")
	mainBefore, nuxBefore := tip(t, repo, "main"), tip(t, repo, "polecat/nux")

	git("-C", seed, "commit", "-q", "--allow-empty", "-m", "second")
	git("-C", seed, "push", "-q", origin, "main", "main:dev", "+main:polecat/nux")
	newTip := git("-C", seed, "rev-parse", "HEAD")

	var logs bytes.Buffer
	r := NewRefresher(0, 10*time.Second, nil, slog.New(slog.NewTextHandler(&logs, nil)))
	r.Maybe(context.Background(), repo, nil)
	if strings.Contains(logs.String(), "failed") {
		t.Fatalf("the refresh failed: %s", logs.String())
	}
	if got := tip(t, repo, "dev"); got != newTip {
		t.Errorf("dev at %s after the refresh, want origin's %s", got, newTip)
	}
	if got := tip(t, repo, "main"); got != mainBefore {
		t.Errorf("main, checked out in the refinery's worktree, moved from %s to %s", mainBefore, got)
	}
	if got := tip(t, repo, "polecat/nux"); got != nuxBefore {
		t.Errorf("polecat/nux moved from %s to %s", nuxBefore, got)
	}
	if st := git("-C", refinery, "status", "--porcelain"); st != "" {
		t.Errorf("the refinery's worktree is not clean after the refresh: %s", st)
	}
}
