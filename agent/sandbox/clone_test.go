package sandbox

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// TestPrepare is a polecat's clone through its sandbox's life, each step
// on the one before: the first prepare clones the rig through the git
// port on the polecat's branch with the git identity given; the next on
// the same branch changes nothing; a reused polecat's new branch is
// checked out, the uncommitted work kept in a stash; a branch the rig
// does not have, or that git does not take, fails and leaves the clone
// where it was; a detached HEAD's commits origin lacks are kept on a
// branch; a branch the clone cannot fast-forward fails and leaves the
// clone where it was; a detached worktree ("") leaves the clone as it is.
func TestPrepare(t *testing.T) {
	f := newFixture(t)
	clone := filepath.Join(f.work, toast.Rig)
	f.git(t, f.rig, "push", "-q", "origin", "main:polecat/toast-1", "main:polecat/toast/gt-next@x1", "main:polecat/toast/gt-third@x3")
	prepare := func(branch string) wire.SandboxAnswer {
		t.Helper()
		answers := f.do(t, wire.SandboxRequest{Op: wire.SandboxPrepare, Branch: branch, Name: "toast", Email: "op@example.com"})
		if len(answers) != 1 {
			t.Fatalf("prepare %s: answers %+v, want one", branch, answers)
		}
		return answers[0]
	}
	on := func() string { return f.git(t, clone, "branch", "--show-current") }
	steps := []struct {
		name, branch string
		want         wire.SandboxClone // Dir is the clone's
		wantErr      string
		before       func()
		after        func()
	}{
		{name: "first: clone on the branch", branch: "polecat/toast-1", want: wire.SandboxClone{Cloned: true, To: "polecat/toast-1"},
			after: func() {
				config := func(key string) string { return f.git(t, clone, "config", "--file", ".git/config", key) }
				if got := config("user.name") + " " + config("user.email"); got != "toast op@example.com" {
					t.Errorf("the clone's identity: %s", got)
				}
				if err := os.WriteFile(filepath.Join(clone, "wip.txt"), []byte("wip"), 0o644); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "again on the same branch", branch: "polecat/toast-1", want: wire.SandboxClone{From: "polecat/toast-1", To: "polecat/toast-1"}},
		{name: "a new branch, the work in a stash", branch: "polecat/toast/gt-next@x1", want: wire.SandboxClone{From: "polecat/toast-1", To: "polecat/toast/gt-next@x1", Stash: "stash"},
			after: func() {
				if out := f.git(t, clone, "stash", "show", "--include-untracked", "--name-only"); out != "wip.txt" {
					t.Errorf("the stash holds %q, want wip.txt", out)
				}
			}},
		{name: "a branch the rig has not", branch: "polecat/toast/unborn", wantErr: "fetching polecat/toast/unborn from the rig"},
		{name: "a branch git does not take", branch: "polecat/toast..x", wantErr: "not a branch name git takes"},
		{name: "a detached HEAD's commits kept", branch: "polecat/toast/gt-third@x3",
			want: wire.SandboxClone{To: "polecat/toast/gt-third@x3", Unpushed: 1, Kept: "polecat-sidecar/detached-"},
			before: func() {
				f.git(t, clone, "checkout", "-q", "--detach")
				f.git(t, clone, "commit", "-q", "--allow-empty", "-m", "made detached")
			}},
		{name: "a branch that cannot fast-forward", branch: "polecat/toast/gt-next@x1", wantErr: "bringing polecat/toast/gt-next@x1 up to the rig's",
			before: func() {
				f.git(t, clone, "update-ref", "refs/heads/polecat/toast/gt-next@x1", f.git(t, clone, "commit-tree", "-p", "polecat/toast/gt-next@x1", "-m", "the clone", "HEAD^{tree}"))
				f.git(t, f.repo, "update-ref", "refs/heads/polecat/toast/gt-next@x1", f.git(t, f.repo, "commit-tree", "-p", "main", "-m", "the rig", "main^{tree}"))
			}},
		{name: "a detached worktree", branch: "", want: wire.SandboxClone{From: "polecat/toast/gt-third@x3", To: "polecat/toast/gt-third@x3"}},
	}
	for _, s := range steps {
		if s.before != nil {
			s.before()
		}
		was := ""
		if s.wantErr != "" {
			was = on()
		}
		a := prepare(s.branch)
		switch {
		case s.wantErr != "":
			if a.Status != wire.SandboxFailed || !strings.Contains(a.Error, s.wantErr) {
				t.Fatalf("%s: %+v, want a failure saying %q", s.name, a, s.wantErr)
			}
			if now := on(); now != was {
				t.Fatalf("%s: the clone is on %q after the failure, was on %q", s.name, now, was)
			}
		case a.Status != wire.SandboxPrepared:
			t.Fatalf("%s: %+v, want prepared", s.name, a)
		default:
			got, want := *a.Clone, s.want
			want.Dir = clone
			if want.Stash != "" && isHex(got.Stash) { // a commit's name
				got.Stash = want.Stash
			}
			if strings.HasPrefix(got.Kept, want.Kept) && want.Kept != "" {
				got.Kept = want.Kept
			}
			if got != want {
				t.Fatalf("%s: %+v, want %+v", s.name, *a.Clone, want)
			}
			if now := on(); now != want.To {
				t.Fatalf("%s: the clone is on %q, want %q", s.name, now, want.To)
			}
		}
		if s.after != nil {
			s.after()
		}
	}
}
