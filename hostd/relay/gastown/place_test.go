package gastown

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/polecat-sidecar/sidecar/hostd/relay/internal/fixture"
)

// gasTownWorktree lays out furiosa's place as gt makes it: the rig's
// beads, its bare repository and the worktree linked to it, with Gas
// Town's redirect.
func gasTownWorktree(t *testing.T, town string) (worktree, gitdir string) {
	t.Helper()
	worktree = filepath.Join(town, "gastown", "polecats", "furiosa", "gastown")
	gitdir = filepath.Join(town, "gastown", ".repo.git", "worktrees", "gastown")
	fixture.Mkdirs(t, town, "gastown/.beads", "gastown/polecats/furiosa/gastown/.beads", "gastown/.repo.git/worktrees/gastown")
	fixture.WriteFile(t, town, "gastown/polecats/furiosa/gastown/.beads/redirect", "../../../.beads\n")
	fixture.WriteFile(t, town, "gastown/polecats/furiosa/gastown/.git", "gitdir: "+gitdir+"\n")
	fixture.WriteFile(t, town, "gastown/.repo.git/worktrees/gastown/gitdir", filepath.Join(worktree, ".git")+"\n")
	fixture.WriteFile(t, town, "gastown/.repo.git/config", "[core]\n\tbare = true\n[remote \"origin\"]\n\turl = file:///srv/origin.git\n\tpushurl = git@example.com:o/r.git\n[remote \"fork\"]\n\turl = https://example.com/fork.git\n")
	return worktree, gitdir
}

// TestLocate: hostd finds the polecat's place from the host's own view,
// and refuses a worktree whose .beads or .git a polecat could have made
// steer relayed commands elsewhere.
func TestLocate(t *testing.T) {
	cases := []struct {
		name  string
		setup func(t *testing.T, town, worktree string)
		want  string // in the refusal; "" when located
	}{
		{"as gt makes it", nil, ""},
		{"no .beads in the worktree", func(t *testing.T, town, wt string) { os.RemoveAll(filepath.Join(wt, ".beads")) }, ""},
		{"no redirect", func(t *testing.T, town, wt string) { os.Remove(filepath.Join(wt, ".beads", "redirect")) }, ""},
		{"an absolute redirect to the rig's beads", func(t *testing.T, town, wt string) {
			fixture.WriteFile(t, wt, ".beads/redirect", filepath.Join(town, "gastown", ".beads")+"\n")
		}, ""},
		{"a redirect to another rig", func(t *testing.T, town, wt string) {
			fixture.Mkdirs(t, town, "other/.beads")
			fixture.WriteFile(t, wt, ".beads/redirect", "../../../../other/.beads\n")
		}, "leading elsewhere than the rig's beads"},
		{"a redirect out of the town", func(t *testing.T, town, wt string) { fixture.WriteFile(t, wt, ".beads/redirect", "/etc\n") }, "leading elsewhere"},
		{"a redirect that is a symlink", func(t *testing.T, town, wt string) {
			os.Remove(filepath.Join(wt, ".beads", "redirect"))
			fixture.Symlink(t, "../../../../.beads/redirect", wt, ".beads/redirect")
		}, "leading elsewhere"},
		{".beads a symlink", func(t *testing.T, town, wt string) {
			os.RemoveAll(filepath.Join(wt, ".beads"))
			fixture.Symlink(t, "../../../.beads", wt, ".beads")
		}, "not a directory"},
		{"bd hooks", func(t *testing.T, town, wt string) { fixture.WriteFile(t, wt, ".beads/hooks/on_create", "#!/bin/sh\n") }, ".beads/hooks, which Gas Town never puts there"},
		{"metadata.json", func(t *testing.T, town, wt string) { fixture.WriteFile(t, wt, ".beads/metadata.json", "{}") }, "metadata.json, which Gas Town never puts there"},
		{".env", func(t *testing.T, town, wt string) { fixture.WriteFile(t, wt, ".beads/.env", "BD_DB=/x") }, ".env, which"},
		{".git to another repository", func(t *testing.T, town, wt string) {
			fixture.Mkdirs(t, town, "gastown/polecats/furiosa/evil")
			fixture.WriteFile(t, wt, ".git", "gitdir: "+filepath.Join(town, "gastown/polecats/furiosa/evil")+"\n")
		}, ".git that does not lead into the rig's repository"},
		{".git to another worktree's directory", func(t *testing.T, town, wt string) {
			fixture.Mkdirs(t, town, "gastown/.repo.git/worktrees/gastown1")
			fixture.WriteFile(t, town, "gastown/.repo.git/worktrees/gastown1/gitdir", "/elsewhere/.git\n")
			fixture.WriteFile(t, wt, ".git", "gitdir: "+filepath.Join(town, "gastown/.repo.git/worktrees/gastown1")+"\n")
		}, ".git that does not lead"},
		{".git relative", func(t *testing.T, town, wt string) {
			fixture.WriteFile(t, wt, ".git", "gitdir: ../../../.repo.git/worktrees/gastown\n")
		}, ".git that does not lead"},
		{".git a directory", func(t *testing.T, town, wt string) {
			os.Remove(filepath.Join(wt, ".git"))
			fixture.Mkdirs(t, wt, ".git")
		}, ".git that does not lead"},
		{"the worktrees directory a symlink", func(t *testing.T, town, wt string) {
			repo := filepath.Join(town, "gastown", ".repo.git")
			if err := os.Rename(filepath.Join(repo, "worktrees"), filepath.Join(town, "moved")); err != nil {
				t.Fatal(err)
			}
			fixture.Symlink(t, "../../moved", town, "gastown/.repo.git/worktrees")
		}, ".git that does not lead"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			town := fixture.RealTempDir(t)
			wt, gitdir := gasTownWorktree(t, town)
			if c.setup != nil {
				c.setup(t, town, wt)
			}
			p, err := Locate(town, fixture.Furiosa)
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Fatalf("got %v, want a refusal with %q", err, c.want)
			case c.want == "":
				if p.Worktree != wt || p.Dir != wt || p.Beads != filepath.Join(town, "gastown", ".beads") || p.gitdir != gitdir {
					t.Errorf("located %+v", p)
				}
			}
		})
	}
}

// TestRigBeads: the rig's beads directory, its redirect followed only
// within the rig, the town's when the rig has none.
func TestRigBeads(t *testing.T) {
	cases := []struct {
		name  string
		setup func(t *testing.T, town string)
		want  string
	}{
		{"the rig's", func(t *testing.T, town string) { fixture.Mkdirs(t, town, "gastown/.beads") }, "gastown/.beads"},
		{"redirected in the rig (a repository that tracks .beads)", func(t *testing.T, town string) {
			fixture.Mkdirs(t, town, "gastown/mayor/rig/.beads")
			fixture.WriteFile(t, town, "gastown/.beads/redirect", "mayor/rig/.beads\n")
		}, "gastown/mayor/rig/.beads"},
		{"redirected out of the rig", func(t *testing.T, town string) {
			fixture.Mkdirs(t, town, "other/.beads")
			fixture.WriteFile(t, town, "gastown/.beads/redirect", "../other/.beads\n")
		}, ""},
		{"redirected through a symlink", func(t *testing.T, town string) {
			fixture.Mkdirs(t, town, "other/.beads", "gastown/mayor")
			fixture.Symlink(t, "../../other", town, "gastown/mayor/rig")
			fixture.WriteFile(t, town, "gastown/.beads/redirect", "mayor/rig/.beads\n")
		}, ""},
		{"the town's when the rig has none", func(t *testing.T, town string) { fixture.Mkdirs(t, town, "gastown", ".beads") }, ".beads"},
		{"the rig's a symlink", func(t *testing.T, town string) {
			fixture.Mkdirs(t, town, "gastown", "other/.beads")
			fixture.Symlink(t, "../other/.beads", town, "gastown/.beads")
		}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			town := fixture.RealTempDir(t)
			c.setup(t, town)
			want := ""
			if c.want != "" {
				want = filepath.Join(town, c.want)
			}
			if got := rigBeads(town, filepath.Join(town, "gastown")); got != want {
				t.Errorf("rigBeads = %q, want %q", got, want)
			}
		})
	}
}

// TestOrigins: the URLs of the rig's origin, from its bare repository's
// configuration, no other remote's.
func TestOrigins(t *testing.T) {
	town := fixture.RealTempDir(t)
	gasTownWorktree(t, town)
	p, err := Locate(town, fixture.Furiosa)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := p.Origins(), []string{"file:///srv/origin.git", "git@example.com:o/r.git"}; !slices.Equal(got, want) {
		t.Errorf("origins = %q, want %q", got, want)
	}
}
