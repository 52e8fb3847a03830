package hook

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/polecat-sidecar/sidecar/hostd/git/branch"
	"github.com/polecat-sidecar/sidecar/hostd/git/internal/fixture"
)

// TestPreReceiveWorktreeGuard runs the hook on pushes to a branch checked
// out in a linked worktree, from the worktree's own commit (base, main's
// README when nil) to one of entries, with core.hooksPath as given:
// changes under .beads, .githooks and the hooks path (and to their
// parents) are refused, in every case and Unicode form a Mac takes for
// them, as are symlinks resolving outside the worktree that it does not
// already hold; everything else lands. With skip, what refuse refuses
// lands, recorded for push-to-checkout to leave the worktree as it is.
func TestPreReceiveWorktreeGuard(t *testing.T) {
	repo := filepath.Join(t.TempDir(), "repo.git")
	wt, main := fixture.WorktreeRepo(t, repo)
	const ref = "refs/heads/polecat/furiosa-wt"
	readme := map[string]string{"README": "hello\n"}
	with := func(extra map[string]string) map[string]string {
		m := map[string]string{"README": "hello\n"}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	githooks := with(map[string]string{".githooks/pre-push": "100755 #!/bin/sh\n"})
	many := with(nil)
	for i := range 12 {
		many[fmt.Sprintf(".beads/hooks/h%02d", i)] = "x"
	}
	cases := []struct {
		name      string
		base, new map[string]string // base nil: main
		hooksPath string
		mode      string // GuardRefuse when empty
		want      []string
	}{
		{name: "work", new: with(map[string]string{"src/x.go": "package x\n", "docs/link": "120000 ../README"})},
		{name: "redirect", new: with(map[string]string{".beads/redirect": "../../../../otherrig/.beads\n"}),
			want: []string{`".beads/redirect": added: bd's directory`}},
		{name: "bd hook", new: with(map[string]string{".beads/hooks/on_create": "100755 #!/bin/sh\n"}),
			want: []string{`".beads/hooks/on_create": added`}},
		{name: "bd config", new: with(map[string]string{".beads/config.yaml": "routing.contributor: /elsewhere\n", ".beads/metadata.json": "{}"}),
			want: []string{`".beads/config.yaml"`, `".beads/metadata.json"`}},
		{name: "upper case", new: with(map[string]string{".BEADS/redirect": "x"}), want: []string{`".BEADS/redirect": added`}},
		{name: "ignorable", new: with(map[string]string{".bea\u200cds/redirect": "x"}), want: []string{`".bea\u200cds/redirect"`}},
		{name: "long s", new: with(map[string]string{".beadſ/hooks/on_close": "100755 x"}), want: []string{`".bead\u017f/hooks/on_close"`}},
		{name: ".beads a link", new: with(map[string]string{".beads": "120000 ../../../../otherrig/.beads"}),
			want: []string{`".beads": added: bd's directory`, "; and a symlink to \"../../../../otherrig/.beads\": it leaves the worktree"}},
		{name: "githooks", new: with(map[string]string{".githooks/pre-commit": "100755 #!/bin/sh\n"}),
			want: []string{`".githooks/pre-commit": added: Gas Town's git hooks directory`}},
		{name: "githooks Kelvin", new: with(map[string]string{".githoo\u212as/pre-commit": "100755 #!/bin/sh\n"}), want: []string{`".githoo\u212as/pre-commit"`}},
		{name: "rig's hooks kept", base: githooks, new: with(map[string]string{".githooks/pre-push": "100755 #!/bin/sh\n", "work": "x"}), hooksPath: ".githooks"},
		{name: "rig's hook changed", base: githooks, new: with(map[string]string{".githooks/pre-push": "100755 #!/bin/sh\nexit 0\n"}), hooksPath: ".githooks",
			want: []string{`".githooks/pre-push": changed`}},
		{name: "rig's hook's mode", base: githooks, new: with(map[string]string{".githooks/pre-push": "#!/bin/sh\n"}), want: []string{`".githooks/pre-push": changed`}},
		{name: "rig's hook removed", base: githooks, new: readme, want: []string{`".githooks/pre-push": removed`}},
		{name: "hooks path", new: with(map[string]string{"tools/hooks/pre-commit": "100755 x"}), hooksPath: "tools/hooks",
			want: []string{`"tools/hooks/pre-commit": added: the worktree's git hooks directory (core.hooksPath)`}},
		{name: "hooks path's parent a link", new: with(map[string]string{"tools": "120000 evil", "evil/hooks/pre-commit": "100755 x"}), hooksPath: "./tools/hooks/",
			want: []string{`"tools": added: the worktree's git hooks directory`}},
		{name: "beside the hooks path", new: with(map[string]string{"tools/build.sh": "100755 x"}), hooksPath: "tools/hooks"},
		{name: "absolute hooks path", new: with(map[string]string{"tools/hooks/x": "x"}), hooksPath: filepath.Join(wt, "Tools", "Hooks"),
			want: []string{`"tools/hooks/x": added: the worktree's git hooks directory`}},
		{name: "hooks path outside", new: with(map[string]string{"hooks/x": "x"}), hooksPath: "../hooks"},
		{name: "link out", new: with(map[string]string{"l": "120000 ../../x"}), want: []string{`"l": a symlink to "../../x": it leaves the worktree`}},
		{name: "absolute link", new: with(map[string]string{"d/l": "120000 /etc"}), want: []string{`"d/l": a symlink to "/etc": it reaches an absolute path`}},
		{name: "chain", new: with(map[string]string{"a": "120000 b/..", "b": "120000 ../.."}),
			want: []string{`"a": a symlink to "b/..": it leaves the worktree through "b"`, `"b": a symlink to "../.."`}},
		{name: "link held", base: with(map[string]string{"l": "120000 ../shared"}), new: with(map[string]string{"l": "120000 ../shared", "work": "x"})},
		{name: "held link retargeted", base: with(map[string]string{"l": "120000 ../shared"}), new: with(map[string]string{"l": "120000 ../other"}),
			want: []string{`"l": a symlink to "../other"`}},
		{name: "held link newly out", base: with(map[string]string{"d/a": "120000 b/../../..", "d/b": "120000 c/e", "d/c/e/f": "x"}),
			new:  with(map[string]string{"d/a": "120000 b/../../..", "d/b/f": "x", "d/c/e/f": "x"}),
			want: []string{`"d/a": a symlink to "b/../../..": it leaves the worktree`}},
		{name: "gitlink", new: with(map[string]string{"vendor/lib": "160000 " + main})},
		{name: "many", new: many, want: []string{`".beads/hooks/h00"`, `".beads/hooks/h09"`, "and 2 more"}},
		{name: "skip", mode: GuardSkip, new: with(map[string]string{".beads/redirect": "x"}),
			want: []string{"lands, but its host worktree is not updated (git.worktree_guard=skip)", `".beads/redirect": added`}},
	}
	t.Chdir(repo)
	t.Setenv(IdentityEnv, "gastown/furiosa")
	t.Setenv(PatternsEnv, strings.Join(branch.DefaultPatterns, ","))
	t.Setenv(PolecatsEnv, "furiosa")
	t.Setenv(MaxCheckoutSizeEnv, "1000000")
	t.Setenv(MaxCheckoutFilesEnv, "1000")
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			base := main
			if c.base != nil {
				base = fixture.CommitPaths(t, repo, main, c.base)
			}
			fixture.GitIn(t, wt, nil, "reset", "-q", "--hard", base)
			if c.hooksPath != "" {
				fixture.GitIn(t, wt, nil, "config", "core.hooksPath", c.hooksPath)
				defer fixture.GitIn(t, wt, nil, "config", "--unset", "core.hooksPath")
			}
			mode := GuardRefuse
			if c.mode != "" {
				mode = c.mode
			}
			t.Setenv(WorktreeGuardEnv, mode)
			record := filepath.Join(t.TempDir(), "record")
			t.Setenv(WorktreeRecordEnv, record)
			commit := fixture.CommitPaths(t, repo, base, c.new)
			var stderr bytes.Buffer
			code := RunPreReceive(strings.NewReader(base+" "+commit+" "+ref+"\n"), &stderr)
			recs, err := ReadRecords(record)
			if err != nil {
				t.Fatal(err)
			}
			if c.want == nil {
				if code != 0 || stderr.Len() > 0 || len(recs) > 0 {
					t.Fatalf("refused: exit %d, %q, records %+v", code, stderr.String(), recs)
				}
				return
			}
			if (code == 0) != (mode == GuardSkip) {
				t.Errorf("exit %d with %s", code, mode)
			}
			for _, w := range c.want {
				if !strings.Contains(stderr.String(), w) {
					t.Errorf("the hook does not say %q:\n%s", w, stderr.String())
				}
			}
			admin := fixture.GitIn(t, wt, nil, "rev-parse", "--absolute-git-dir")
			if len(recs) != 1 || recs[0].Action != mode || recs[0].Ref != ref || recs[0].Commit != commit || recs[0].Worktree != wt || recs[0].Admin != admin ||
				!strings.Contains(strings.Join(recs[0].Paths, "\n"), strings.TrimSuffix(c.want[len(c.want)-1], "and 2 more")) {
				t.Errorf("records %+v", recs)
			}
		})
	}

	// The same commit to a branch checked out nowhere is not judged, and a
	// branch checked out without hostd's guard setting is refused.
	evil := fixture.CommitPaths(t, repo, main, with(map[string]string{".beads/redirect": "x"}))
	var stderr bytes.Buffer
	if code := RunPreReceive(strings.NewReader(main+" "+evil+" refs/heads/polecat/furiosa-elsewhere\n"), &stderr); code != 0 {
		t.Errorf("a branch checked out nowhere: exit %d, %q", code, stderr.String())
	}
	fixture.GitIn(t, wt, nil, "reset", "-q", "--hard", main)
	os.Unsetenv(WorktreeGuardEnv)
	if code := RunPreReceive(strings.NewReader(main+" "+evil+" "+ref+"\n"), &stderr); code == 0 || !strings.Contains(stderr.String(), "no valid git.worktree_guard") {
		t.Errorf("no guard setting: exit %d, %q", code, stderr.String())
	}
}

// TestPreReceiveLongLinks runs the hook on two pushes to a branch checked
// out in a worktree, each of 100 symlinks with 4095-byte targets beside a
// directory 2,048 deep: one whose links reach to its bottom (d/d/...),
// one whose links go down into it and back up (d/../d/../...). Both land,
// and the deep links take the hook's own CPU (getrusage; the git commands
// it runs are not counted) within a few times the shallow ones'. The
// resolver that joined the whole path at every name took 1.6 s for the
// deep ones, 25 times the shallow ones' 63 ms (24 s with -race).
func TestPreReceiveLongLinks(t *testing.T) {
	repo := filepath.Join(t.TempDir(), "repo.git")
	_, main := fixture.WorktreeRepo(t, repo)
	const ref = "refs/heads/polecat/furiosa-wt"
	deep := strings.Repeat("d/", 2047) + "d"
	targets := map[string]string{"deep": deep, "shallow": strings.Repeat("d/../", 819)}
	t.Chdir(repo)
	t.Setenv(IdentityEnv, "gastown/furiosa")
	t.Setenv(PatternsEnv, strings.Join(branch.DefaultPatterns, ","))
	t.Setenv(PolecatsEnv, "furiosa")
	t.Setenv(MaxCheckoutSizeEnv, "1000000")
	t.Setenv(MaxCheckoutFilesEnv, "10000")
	t.Setenv(WorktreeGuardEnv, GuardRefuse)
	t.Setenv(WorktreeRecordEnv, filepath.Join(t.TempDir(), "record"))
	cpu := map[string]time.Duration{}
	for _, name := range []string{"deep", "shallow"} {
		entries := map[string]string{"README": "hello\n", deep + "/f": "x"}
		for i := range 100 {
			entries[fmt.Sprintf("l%03d", i)] = "120000 " + targets[name]
		}
		commit := fixture.CommitPaths(t, repo, main, entries)
		runtime.GC()
		before := cpuTime(t)
		var stderr bytes.Buffer
		code := RunPreReceive(strings.NewReader(main+" "+commit+" "+ref+"\n"), &stderr)
		cpu[name] = cpuTime(t) - before
		if code != 0 || stderr.Len() > 0 {
			t.Fatalf("%s: refused: exit %d, %q", name, code, stderr.String())
		}
	}
	t.Logf("the hook's CPU on 100 links of 4095 bytes: %v deep, %v shallow", cpu["deep"], cpu["shallow"])
	if limit := 4*cpu["shallow"] + 100*time.Millisecond; cpu["deep"] > limit {
		t.Errorf("the deep links took %v of the hook's CPU, the shallow ones %v: over %v", cpu["deep"], cpu["shallow"], limit)
	}
}

// cpuTime is the CPU time this process has used, in user and system
// mode; its children's is not counted.
func cpuTime(t *testing.T) time.Duration {
	t.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatalf("getrusage: %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
