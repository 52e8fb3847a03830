package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/polecat-sidecar/sidecar/hostd/api"
	"github.com/polecat-sidecar/sidecar/internal/settings/settingstest"
)

// rigRepos makes <town>/<rig>/.repo.git with a branch polecat/nux, and an
// origin for it, with real git; it returns the town and origin's path.
func rigRepos(t *testing.T) (town, origin string) {
	t.Helper()
	town = t.TempDir()
	origin = filepath.Join(t.TempDir(), "origin.git")
	repo := filepath.Join(town, "gastown", ".repo.git")
	work := t.TempDir()
	for _, args := range [][]string{
		{"init", "-q", "--bare", origin},
		{"init", "-q", "--bare", repo},
		{"-C", repo, "remote", "add", "origin", origin},
		{"init", "-q", "-b", "polecat/nux", work},
		{"-C", work, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "work"},
		{"-C", work, "push", "-q", repo, "polecat/nux"},
	} {
		if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
	}
	return town, origin
}

func tip(t *testing.T, repo, branch string) string {
	out, _ := exec.Command("git", "-C", repo, "rev-parse", "--verify", "--quiet", "refs/heads/"+branch).Output()
	return strings.TrimSpace(string(out))
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// waitFor polls cond for up to 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}

// TestQueuePushes: a queued branch reaches origin and leaves the queue; a
// push that fails stays queued with its error and backs off, across a
// restart of the queue, and goes once origin is back.
func TestQueuePushes(t *testing.T) {
	town, origin := rigRepos(t)
	repo := filepath.Join(town, "gastown", ".repo.git")
	file := filepath.Join(t.TempDir(), "upstream.json")
	cfg := Config{MinBackoff: 50 * time.Millisecond, MaxBackoff: 100 * time.Millisecond}

	// Origin away: the push fails and the entry stays, with its error.
	hidden := origin + ".away"
	if err := os.Rename(origin, hidden); err != nil {
		t.Fatal(err)
	}
	q, err := Open(town, file, cfg, quiet())
	if err != nil {
		t.Fatal(err)
	}
	if n := q.Enqueue("gastown", "nux", "polecat/nux"); n != 1 {
		t.Fatalf("queued %d, want 1", n)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { q.Run(ctx); close(done) }()
	waitFor(t, "a failed attempt", func() bool { p := q.Pending(); return len(p) == 1 && p[0].Attempts >= 1 })
	cancel()
	<-done
	p := q.Pending()[0]
	if p.Owner != "nux" || p.LastError == "" || !p.NextTry.After(p.Since) {
		t.Errorf("failed entry %+v: want owner nux, its error and a later try", p)
	}

	// Reopened from its file, origin back: it is pushed and leaves.
	if err := os.Rename(hidden, origin); err != nil {
		t.Fatal(err)
	}
	q, err = Open(town, file, cfg, quiet())
	if err != nil || len(q.Pending()) != 1 {
		t.Fatalf("reopened queue: %v, %d pending, want 1", err, len(q.Pending()))
	}
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	go q.Run(ctx)
	waitFor(t, "the push to origin", func() bool { return len(q.Pending()) == 0 })
	if got, want := tip(t, origin, "polecat/nux"), tip(t, repo, "polecat/nux"); got == "" || got != want {
		t.Errorf("origin's polecat/nux %q, want %q", got, want)
	}
}

// TestQueueReadsTodaysFile: testdata/upstream.json was written by the
// release before the queue had a stored type of its own; a queue opened on
// it has every branch, field for field, and writes them back as they were.
func TestQueueReadsTodaysFile(t *testing.T) {
	fixture, err := os.ReadFile(filepath.Join("testdata", "upstream.json"))
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "upstream.json")
	if err := os.WriteFile(file, fixture, 0o600); err != nil {
		t.Fatal(err)
	}
	q, err := Open(t.TempDir(), file, Config{}, quiet())
	if err != nil {
		t.Fatal(err)
	}
	at := func(v string) time.Time {
		tm, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			t.Fatal(err)
		}
		return tm
	}
	want := []api.UpstreamItem{
		{Rig: "gastown", Branch: "polecat/nux", Owner: "nux", Since: at("2026-11-28T19:11:47.307501486Z"), NextTry: at("2026-11-28T19:11:47.307501486Z")},
		{Rig: "gastown", Branch: "polecat/furiosa", Owner: "furiosa", Since: at("2026-11-28T19:11:47.310443027Z"), Attempts: 3,
			LastError: "git push origin: exit status 128: fatal: could not read from remote repository", NextTry: at("2026-11-28T19:11:51.310443027Z")},
	}
	if got := q.Pending(); !slices.Equal(got, want) {
		t.Fatalf("queue read from today's file: %+v, want %+v", got, want)
	}
	// Saving (another branch queued) writes the old ones back as they were.
	if n := q.Enqueue("gastown", "toast", "polecat/toast"); n != 1 {
		t.Fatalf("queued %d, want 1", n)
	}
	var before, after []map[string]any
	written, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := errors.Join(json.Unmarshal(fixture, &before), json.Unmarshal(written, &after)); err != nil {
		t.Fatal(err)
	}
	for _, old := range before {
		if !slices.ContainsFunc(after, func(m map[string]any) bool { return reflect.DeepEqual(m, old) }) {
			t.Errorf("entry %v of today's file is not written back as it was:\n%s", old, written)
		}
	}
}

// TestQueueShare: past MaxPerPolecat a polecat's branches are not queued,
// and another polecat's still are.
func TestQueueShare(t *testing.T) {
	q, err := Open(t.TempDir(), filepath.Join(t.TempDir(), "upstream.json"), Config{MaxPerPolecat: 2}, quiet())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		owner    string
		branches []string
		want     int
	}{
		{"nux", []string{"polecat/nux-1", "polecat/nux-2", "polecat/nux-3"}, 2},
		{"nux", []string{"polecat/nux-1"}, 1}, // already queued: pushed again, not counted twice
		{"nux", []string{"polecat/nux-4"}, 0},
		{"furiosa", []string{"polecat/furiosa"}, 1},
	} {
		if got := q.Enqueue("gastown", c.owner, c.branches...); got != c.want {
			t.Errorf("%s %v: queued %d, want %d", c.owner, c.branches, got, c.want)
		}
	}
	if n := len(q.Pending()); n != 3 {
		t.Errorf("%d pending, want 3", n)
	}
}

// TestReconcile: a polecat branch that differs from origin is queued for
// its owner; one origin has, and branches owner names no polecat for, are
// not.
func TestReconcile(t *testing.T) {
	town, _ := rigRepos(t)
	repo := filepath.Join(town, "gastown", ".repo.git")
	if out, err := exec.Command("git", "-C", repo, "branch", "main", "polecat/nux").CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if out, err := exec.Command("git", "-C", repo, "push", "-q", "origin", "main").CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if out, err := exec.Command("git", "-C", repo, "branch", "polecat/furiosa", "polecat/nux").CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if out, err := exec.Command("git", "-C", repo, "push", "-q", "origin", "polecat/furiosa").CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	q, err := Open(town, filepath.Join(t.TempDir(), "upstream.json"), Config{}, quiet())
	if err != nil {
		t.Fatal(err)
	}
	owner := func(branch string) (string, bool) {
		name, ok := strings.CutPrefix(branch, "polecat/")
		return name, ok
	}
	n, err := q.Reconcile(context.Background(), "gastown", repo, owner)
	if err != nil || n != 1 {
		t.Fatalf("reconcile: queued %d, %v; want 1", n, err)
	}
	if p := q.Pending(); p[0].Branch != "polecat/nux" || p[0].Owner != "nux" {
		t.Errorf("queued %+v, want polecat/nux for nux", p[0])
	}
	if _, err := q.Reconcile(context.Background(), "gastown", filepath.Join(town, "nowhere.git"), owner); err == nil {
		t.Error("reconciling a missing repository: no error")
	}
}

// TestConfig: Open takes zero fields as the defaults and refuses a field
// out of its range, naming it.
func TestConfig(t *testing.T) {
	open := func(c Config) error {
		_, err := Open(t.TempDir(), filepath.Join(t.TempDir(), "upstream.json"), c, slog.New(slog.DiscardHandler))
		return err
	}
	settingstest.Run(t, DefaultConfig, open, []settingstest.Case[Config]{
		{Name: "defaults"},
		{Name: "zero is the default", Set: func(c *Config) { *c = Config{} }},
		{Name: "negative min backoff", Set: func(c *Config) { c.MinBackoff = -time.Second }, Want: "upstream: MinBackoff is -1s: it must be above 0"},
		{Name: "max backoff below min", Set: func(c *Config) { c.MinBackoff = 10 * time.Minute }, Want: "MinBackoff is 10m0s: it must be at most MaxBackoff (5m0s)"},
		{Name: "negative timeout", Set: func(c *Config) { c.Timeout = -time.Second }, Want: "Timeout is -1s: it must be above 0"},
		{Name: "negative batch", Set: func(c *Config) { c.Batch = -1 }, Want: "Batch is -1: it must be above 0"},
		{Name: "negative queue", Set: func(c *Config) { c.MaxPerPolecat = -1 }, Want: "MaxPerPolecat is -1: it must be above 0"},
	})
}
