package git

import (
	"bytes"
	"context"
	"crypto/rand"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/polecat-sidecar/sidecar/hostd/git/hook"
	"github.com/polecat-sidecar/sidecar/hostd/git/internal/fixture"
	"github.com/polecat-sidecar/sidecar/hostd/git/worktree"
	"github.com/polecat-sidecar/sidecar/hostd/limits"
	"github.com/polecat-sidecar/sidecar/internal/settings/settingstest"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

func TestProtocolEnv(t *testing.T) {
	for h, want := range map[string]string{"": "", "version=2": "GIT_PROTOCOL=version=2", "version=1": "GIT_PROTOCOL=version=1"} {
		env, err := protocolEnv(h)
		if err != nil || strings.Join(env, "") != want {
			t.Errorf("%q: %v %v", h, env, err)
		}
	}
	for _, h := range []string{"version=0", "version=3", "version=2:object-format=sha256", "version=2\nGIT_DIR=/etc", "version=2 ", "VERSION=2", strings.Repeat("x", 1000)} {
		if _, err := protocolEnv(h); err == nil {
			t.Errorf("%q accepted", h)
		}
	}
}

// TestConfig: New takes zero fields as the defaults and refuses a field
// out of its range, a malformed branch pattern or polecat name, naming it.
// A negative RefreshAge or Reconcile means never; Validate, which hostd
// serve runs on its settings before New, refuses a zero one.
func TestConfig(t *testing.T) {
	valid := func() Config {
		c := DefaultConfig()
		c.Town, c.HooksDir, c.TempDir, c.Logger = t.TempDir(), t.TempDir(), t.TempDir(), slog.New(slog.DiscardHandler)
		return c
	}
	settingstest.Run(t, valid, func(c Config) error { _, err := New(c); return err }, []settingstest.Case[Config]{
		{Name: "defaults"},
		{Name: "zero is the default", Set: func(c *Config) { *c = Config{Town: c.Town, HooksDir: c.HooksDir, TempDir: c.TempDir} }},
		{Name: "never refresh nor reconcile", Set: func(c *Config) { c.RefreshAge, c.Reconcile = -time.Second, -time.Second }},
		{Name: "no town", Set: func(c *Config) { c.Town = "" }, Want: "git: Town is required"},
		{Name: "no hooks", Set: func(c *Config) { c.HooksDir = "" }, Want: "HooksDir is required"},
		{Name: "no temp dir", Set: func(c *Config) { c.TempDir = "" }, Want: "TempDir is required"},
		{Name: "negative refresh timeout", Set: func(c *Config) { c.RefreshTimeout = -time.Second }, Want: "RefreshTimeout is -1s: it must be above 0"},
		{Name: "negative processes", Set: func(c *Config) { c.MaxProcesses = -1 }, Want: "MaxProcesses is -1: it must be above 0"},
		{Name: "negative per polecat", Set: func(c *Config) { c.MaxProcessesPerPolecat = -1 }, Want: "MaxProcessesPerPolecat is -1: it must be above 0"},
		{Name: "negative wait", Set: func(c *Config) { c.ProcessWait = -time.Second }, Want: "ProcessWait is -1s: it must be above 0"},
		{Name: "negative idle", Set: func(c *Config) { c.IdleTimeout = -time.Second }, Want: "IdleTimeout is -1s: it must be above 0"},
		{Name: "negative push size", Set: func(c *Config) { c.MaxPushSize = -1 }, Want: "MaxPushSize is -1: it must be above 0"},
		{Name: "negative checkout size", Set: func(c *Config) { c.MaxCheckoutSize = -1 }, Want: "MaxCheckoutSize is -1: it must be above 0"},
		{Name: "negative checkout files", Set: func(c *Config) { c.MaxCheckoutFiles = -1 }, Want: "MaxCheckoutFiles is -1: it must be above 0"},
		{Name: "malformed pattern", Set: func(c *Config) { c.Branches = map[string][]string{"gastown": {"polecat/*"}} }, Want: `Branches.gastown is [polecat/*]: branch pattern "polecat/*": needs {name} exactly once`},
		{Name: "malformed polecat", Set: func(c *Config) { c.Polecats = map[string][]string{"gastown": {"no/slash"}} }, Want: `Polecats.gastown is "no/slash": `},
		{Name: "skip the worktree", Set: func(c *Config) { c.WorktreeGuard = hook.GuardSkip }},
		{Name: "unknown guard", Set: func(c *Config) { c.WorktreeGuard = "ignore" }, Want: `WorktreeGuard is "ignore": it must be refuse or skip`},
		{Name: "more per polecat than in all", Set: func(c *Config) { c.MaxProcesses, c.MaxProcessesPerPolecat = 4, 8 }, Want: "MaxProcessesPerPolecat is 8: it must be at most MaxProcesses (4)"},
	})
	settingstest.Run(t, valid, Config.Validate, []settingstest.Case[Config]{
		{Name: "zero refresh age given", Set: func(c *Config) { c.RefreshAge = 0 }, Want: "RefreshAge is 0s: it must not be 0 (negative: never refresh)"},
		{Name: "zero reconcile given", Set: func(c *Config) { c.Reconcile = 0 }, Want: "Reconcile is 0s: it must not be 0 (negative: never reconcile)"},
	})
}

// serveClone serves town through a Service, configured by set, to
// gastown/furiosa, and returns a clone of branch through it, whose origin
// pushes through it, and the Service.
func serveClone(t *testing.T, town, branch string, set func(*Config)) (string, *Service) {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Town, cfg.HooksDir, cfg.TempDir = town, filepath.Join(town, "hooks"), t.TempDir()
	cfg.RefreshAge, cfg.Reconcile, cfg.Logger = -1, -1, slog.New(slog.DiscardHandler)
	set(&cfg)
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	id := wire.Identity{Rig: "gastown", Name: "furiosa"}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), idKey{}, id)))
	}))
	t.Cleanup(srv.Close)
	work := filepath.Join(t.TempDir(), "w")
	fixture.GitIn(t, "", nil, "clone", "-q", "--branch", branch, srv.URL+"/v1/git/gastown", work)
	return work, s
}

// TestPushIntoWorktree pushes through Service, with real git and the
// real hooks, to a branch checked out in a linked worktree of the rig's
// .repo.git, as Gas Town makes a polecat's host worktree: the push lands
// and the worktree's files follow; a push whose checkout would go over
// git.max_checkout_size (among them a 64 MiB file of zeros, a pack of
// some 64 KiB well within git.max_push_size) is refused with the setting
// named and changes neither the worktree nor the ref; with the host's own
// changes in the worktree git refuses the push and keeps them; a branch
// checked out nowhere is not bound.
func TestPushIntoWorktree(t *testing.T) {
	town := t.TempDir()
	repo := filepath.Join(town, "gastown", ".repo.git")
	wt, main := fixture.WorktreeRepo(t, repo)
	const branch = "polecat/furiosa-wt"
	work, _ := serveClone(t, town, branch, func(cfg *Config) { cfg.MaxPushSize, cfg.MaxCheckoutSize = 1<<20, 512<<10 })
	head := func() string { return fixture.GitIn(t, repo, nil, "rev-parse", "refs/heads/"+branch) }
	push := func(commit, ref string) (string, error) {
		return fixture.TryGit(t, work, nil, "push", "origin", commit+":refs/heads/"+ref)
	}

	// Within the bounds: the ref moves and the worktree has the files.
	data := make([]byte, 100<<10)
	_, _ = rand.Read(data)
	want := fixture.CommitTree(t, work, main, fixture.Text("README", "hello\n"), fixture.File{Name: "work.bin", Data: bytes.NewReader(data)})
	if out, err := push(want, branch); err != nil {
		t.Fatalf("push of the checked-out branch: %v\n%s", err, out)
	}
	if got := fixture.GitIn(t, wt, nil, "rev-parse", "HEAD"); got != want {
		t.Fatalf("worktree at %s after the push, want %s", got, want)
	}
	if b, err := os.ReadFile(filepath.Join(wt, "work.bin")); err != nil || !bytes.Equal(b, data) {
		t.Fatalf("the pushed file in the worktree: %d bytes, %v", len(b), err)
	}
	if st := fixture.GitIn(t, wt, nil, "status", "--porcelain"); st != "" {
		t.Errorf("worktree not clean after the push:\n%s", st)
	}

	// Over the bound: refused before anything is written.
	hits := limits.Total()
	big := make([]byte, 700<<10)
	_, _ = rand.Read(big)
	bomb := time.Now()
	for name, f := range map[string]fixture.File{"700 KiB of random bytes": {Name: "big.bin", Data: bytes.NewReader(big)}, "64 MiB of zeros": {Name: "zeros.bin", Data: fixture.Zeros(64 << 20)}} {
		c := fixture.CommitTree(t, work, want, fixture.Text("README", "hello\n"), f)
		out, err := push(c, branch)
		if err == nil || !strings.Contains(out, "git.max_checkout_size") {
			t.Fatalf("%s: push over git.max_checkout_size: %v\n%s", name, err, out)
		}
		if got := head(); got != want {
			t.Errorf("%s: the refused push moved the branch to %s", name, got)
		}
		if _, err := os.Stat(filepath.Join(wt, f.Name)); err == nil {
			t.Errorf("%s: the refused push wrote into the worktree", name)
		}
	}
	t.Logf("refusals over git.max_checkout_size: %v", time.Since(bomb))
	if got := limits.Total() - hits; got != 2 {
		t.Errorf("%d limit hits counted for two refused pushes", got)
	}

	// Not checked out anywhere: not bound by the checkout settings.
	c := fixture.CommitTree(t, work, want, fixture.File{Name: "zeros.bin", Data: fixture.Zeros(8 << 20)})
	if out, err := push(c, "polecat/furiosa-elsewhere"); err != nil {
		t.Fatalf("push of a branch checked out nowhere: %v\n%s", err, out)
	}

	// The host's own edit in the worktree: git refuses the push, and the
	// edit and the branch stay.
	if err := os.WriteFile(filepath.Join(wt, "README"), []byte("the operator's edit\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c = fixture.CommitTree(t, work, want, fixture.Text("README", "hello\n"), fixture.Text("more", "more\n"))
	out, err := push(c, branch)
	if err == nil || !strings.Contains(out, "unstaged changes") {
		t.Fatalf("push over a worktree with the host's changes: %v\n%s", err, out)
	}
	if b, _ := os.ReadFile(filepath.Join(wt, "README")); string(b) != "the operator's edit\n" {
		t.Errorf("the host's edit became %q", b)
	}
	if got := head(); got != want {
		t.Errorf("the refused push moved the branch to %s", got)
	}
}

// TestPushToCheckout pushes through Service with git.worktree_guard=skip,
// so that hostd's push-to-checkout updates the host worktree: a push the
// guard passes updates it as git would; one it does not lands and leaves
// the worktree as it was, recorded as behind (its index a tree behind its
// HEAD, which git status shows as the push undone); the next push the
// guard passes catches the worktree up; a worktree with the host's own
// changes refuses a push, in git's words. A hostd started again with
// refuse removes the hook.
func TestPushToCheckout(t *testing.T) {
	town := t.TempDir()
	repo := filepath.Join(town, "gastown", ".repo.git")
	wt, main := fixture.WorktreeRepo(t, repo)
	const branch = "polecat/furiosa-wt"
	work, s := serveClone(t, town, branch, func(cfg *Config) { cfg.WorktreeGuard = hook.GuardSkip })
	installed := filepath.Join(town, "hooks", hook.PushToCheckout)
	if _, err := os.Lstat(installed); err != nil {
		t.Fatalf("no push-to-checkout hook with skip: %v", err)
	}
	host := worktree.Worktree{Admin: fixture.GitIn(t, wt, nil, "rev-parse", "--absolute-git-dir"), Dir: wt}
	push := func(commit string) (string, error) {
		return fixture.TryGit(t, work, nil, "push", "origin", commit+":refs/heads/"+branch)
	}
	at := func(want, why string) {
		t.Helper()
		if got := fixture.GitIn(t, repo, nil, "rev-parse", "refs/heads/"+branch); got != want {
			t.Errorf("%s: the branch is at %s, want %s", why, got, want)
		}
	}
	has := func(name string) bool { _, err := os.Lstat(filepath.Join(wt, name)); return err == nil }

	// Passed: updated as git would.
	c1 := fixture.CommitPaths(t, work, main, map[string]string{"README": "hello\n", "work1": "1"})
	if out, err := push(c1); err != nil {
		t.Fatalf("push: %v\n%s", err, out)
	}
	if !has("work1") || fixture.GitIn(t, wt, nil, "status", "--porcelain") != "" {
		t.Fatalf("the worktree did not follow a push the guard passes: %s", fixture.GitIn(t, wt, nil, "status", "--porcelain"))
	}

	// Not passed: lands, the worktree stays.
	c2 := fixture.CommitPaths(t, work, c1, map[string]string{"README": "hello\n", "work1": "1", "work2": "2", ".beads/hooks/on_create": "100755 #!/bin/sh\n"})
	out, err := push(c2)
	if err != nil || !strings.Contains(out, "lands, but its host worktree is not updated") || !strings.Contains(out, `".beads/hooks/on_create"`) {
		t.Fatalf("push the guard skips: %v\n%s", err, out)
	}
	at(c2, "skipped")
	if has(".beads") || has("work2") {
		t.Error("the skipped push wrote into the worktree")
	}
	if base, err := worktree.Base(host); err != nil || base != fixture.GitIn(t, repo, nil, "rev-parse", c1+"^{tree}") {
		t.Errorf("the worktree is not recorded as behind at c1's tree: %q %v", base, err)
	}
	if st := fixture.GitIn(t, wt, nil, "status", "--porcelain"); !strings.Contains(st, "D  .beads/hooks/on_create") {
		t.Errorf("git status in the worktree left behind:\n%s", st)
	}
	if got := guardCount(t, s, hook.GuardSkip); got != 1 {
		t.Errorf("%v skips counted", got)
	}

	// Passed again: the worktree catches up.
	c3 := fixture.CommitPaths(t, work, c2, map[string]string{"README": "hello\n", "work1": "1", "work2": "2", "work3": "3"})
	if out, err := push(c3); err != nil {
		t.Fatalf("push after a skip: %v\n%s", err, out)
	}
	if !has("work2") || !has("work3") || has(".beads") || fixture.GitIn(t, wt, nil, "status", "--porcelain") != "" {
		t.Errorf("the worktree did not catch up: %s", fixture.GitIn(t, wt, nil, "status", "--porcelain"))
	}
	if base, err := worktree.Base(host); err != nil || base != "HEAD" {
		t.Errorf("the worktree is still recorded as behind: %q %v", base, err)
	}

	// The host's own changes: refused, in git's words.
	if err := os.WriteFile(filepath.Join(wt, "README"), []byte("the operator's edit\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c4 := fixture.CommitPaths(t, work, c3, map[string]string{"README": "hello\n", "work4": "4"})
	if out, err := push(c4); err == nil || !strings.Contains(out, "working directory has unstaged changes") {
		t.Errorf("push over the host's changes: %v\n%s", err, out)
	}
	at(c3, "over the host's changes")
	if b, _ := os.ReadFile(filepath.Join(wt, "README")); string(b) != "the operator's edit\n" {
		t.Errorf("the host's edit became %q", b)
	}

	cfg := DefaultConfig()
	cfg.Town, cfg.HooksDir, cfg.TempDir = town, filepath.Join(town, "hooks"), t.TempDir()
	if _, err := New(cfg); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(installed); err == nil {
		t.Error("push-to-checkout is still installed with refuse")
	}
}

// guardCount is sidecar_git_worktree_guard_total{action} of s.
func guardCount(t *testing.T, s *Service, action string) float64 {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(s.Collectors()...)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "sidecar_git_worktree_guard_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			if l := m.GetLabel(); len(l) == 1 && l[0].GetValue() == action {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}
