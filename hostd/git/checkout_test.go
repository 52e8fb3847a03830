package git

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/polecat-sidecar/sidecar/hostd/limits"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// gitIn runs git in dir (the current directory when empty) with stdin,
// isolated from the machine's configuration, and returns its trimmed
// output, failing the test on error.
func gitIn(t *testing.T, dir string, stdin io.Reader, args ...string) string {
	t.Helper()
	out, err := tryGit(t, dir, stdin, args...)
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(out)
}

// tryGit is gitIn that returns git's combined output and error.
func tryGit(t *testing.T, dir string, stdin io.Reader, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir, cmd.Stdin = dir, stdin
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "GIT_CONFIG_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// zeros reads as n zero bytes: a blob that compresses about a
// thousandfold.
func zeros(n int64) io.Reader { return io.LimitReader(zeroReader{}, n) }

type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// file is one entry of a tree commitTree makes: a blob of data (with
// mode, 100644 when empty: 100755, or 120000 for a symlink to data), a
// gitlink (mode 160000) to the commit id data holds, or the tree of
// commit dir.
type file struct {
	name string
	data io.Reader
	dir  string
	mode string
}

// commitTree writes files as a tree and a commit of it on parent (none
// when empty) into the repository at dir, with plumbing, so nothing is
// checked out to make it, and returns the commit's id.
func commitTree(t *testing.T, dir, parent string, files ...file) string {
	t.Helper()
	var tree strings.Builder
	for _, f := range files {
		if f.dir != "" {
			fmt.Fprintf(&tree, "040000 tree %s\t%s\n", gitIn(t, dir, nil, "rev-parse", f.dir+"^{tree}"), f.name)
			continue
		}
		if f.mode == "160000" {
			id, _ := io.ReadAll(f.data)
			fmt.Fprintf(&tree, "160000 commit %s\t%s\n", id, f.name)
			continue
		}
		id := gitIn(t, dir, f.data, "hash-object", "-w", "--no-filters", "--stdin")
		fmt.Fprintf(&tree, "%s blob %s\t%s\n", cmp.Or(f.mode, "100644"), id, f.name)
	}
	args := []string{"commit-tree", "-m", "t", gitIn(t, dir, strings.NewReader(tree.String()), "mktree")}
	if parent != "" {
		args = append(args, "-p", parent)
	}
	return gitIn(t, dir, nil, args...)
}

// text is a file of small content.
func text(name, s string) file { return file{name: name, data: strings.NewReader(s)} }

// worktreeRepo makes a bare repository with main, as Gas Town's
// .repo.git, and a linked worktree of it at <dir>/wt on the branch
// polecat/furiosa-wt, as Gas Town makes a polecat's host worktree. It
// returns the repository, the worktree and main's commit.
func worktreeRepo(t *testing.T, repo string) (wt, main string) {
	t.Helper()
	gitIn(t, "", nil, "init", "-q", "--bare", "-b", "main", repo)
	main = commitTree(t, repo, "", text("README", "hello\n"))
	gitIn(t, repo, nil, "update-ref", "refs/heads/main", main)
	wt = filepath.Join(filepath.Dir(repo), "wt")
	gitIn(t, repo, nil, "worktree", "add", "-q", "-b", "polecat/furiosa-wt", wt, "main")
	return wt, main
}

// TestCheckedOutWorktrees: the branches git's updateInstead would write
// into a worktree, and the worktrees: those checked out in linked
// worktrees, and those a worktree is rebasing or bisecting; not a detached
// worktree's. A bare repository's HEAD counts, with no directory.
func TestCheckedOutWorktrees(t *testing.T) {
	repo := filepath.Join(t.TempDir(), "repo.git")
	gitIn(t, "", nil, "init", "-q", "--bare", "-b", "main", repo)
	bare := worktree{admin: repo}
	if got, err := checkedOutWorktrees(repo); err != nil || len(got) != 1 || !slices.Equal(got["refs/heads/main"], []worktree{bare}) {
		t.Fatalf("no worktrees: %v %v, want only the bare repository's HEAD", got, err)
	}
	main := commitTree(t, repo, "", text("README", "hello\n"))
	gitIn(t, repo, nil, "update-ref", "refs/heads/main", main)
	dir := t.TempDir()
	gitIn(t, repo, nil, "worktree", "add", "-q", "-b", "polecat/furiosa-a", filepath.Join(dir, "a"), "main")
	gitIn(t, repo, nil, "worktree", "add", "-q", "--detach", filepath.Join(dir, "b"), "main")
	gitIn(t, repo, nil, "worktree", "add", "-q", "--detach", filepath.Join(dir, "c"), "main")
	gitIn(t, repo, nil, "worktree", "add", "-q", "--detach", filepath.Join(dir, "d"), "main")
	// b rebases polecat/furiosa-b (its state as git writes it), c bisects
	// with nux's branch as the one to return to.
	admin := func(wt string) string {
		return gitIn(t, filepath.Join(dir, wt), nil, "rev-parse", "--absolute-git-dir")
	}
	_ = os.MkdirAll(filepath.Join(admin("b"), "rebase-merge"), 0o755)
	_ = os.WriteFile(filepath.Join(admin("b"), "rebase-merge", "head-name"), []byte("refs/heads/polecat/furiosa-b\n"), 0o644)
	_ = os.WriteFile(filepath.Join(admin("c"), "BISECT_START"), []byte("polecat/nux-c\n"), 0o644)
	got, err := checkedOutWorktrees(repo)
	if err != nil {
		t.Fatal(err)
	}
	in := func(wt string) []worktree { return []worktree{{admin: admin(wt), dir: filepath.Join(dir, wt)}} }
	want := map[string][]worktree{"refs/heads/main": {bare}, "refs/heads/polecat/furiosa-a": in("a"),
		"refs/heads/polecat/furiosa-b": in("b"), "refs/heads/polecat/nux-c": in("c")}
	if !maps.EqualFunc(got, want, slices.Equal) {
		t.Errorf("checked out: %v, want %v", got, want)
	}
}

// TestPreReceiveCheckout runs the hook in a repository with a linked
// worktree: a branch checked out there is pushed only with a tree within
// git.max_checkout_size (its blob sizes, times the growth its
// .gitattributes allow) and git.max_checkout_files; a branch checked out
// nowhere is not looked at, bounds or none.
func TestPreReceiveCheckout(t *testing.T) {
	repo := filepath.Join(t.TempDir(), "repo.git")
	_, main := worktreeRepo(t, repo)
	many := make([]file, 11)
	for i := range many {
		many[i] = text(fmt.Sprintf("f%02d", i), "")
	}
	ident := commitTree(t, repo, "", text(".gitattributes", "a ident\n"), text("a", strings.Repeat("$Id$", 23)))
	commits := map[string]string{
		"small": commitTree(t, repo, main, text("a", strings.Repeat("x", 1000))),
		"big":   commitTree(t, repo, main, file{name: "a", data: zeros(1001)}),
		"many":  commitTree(t, repo, main, many...),
		// 100 bytes of blobs, which could check out as 1,800 (ident).
		"ident":  ident,
		"nested": commitTree(t, repo, main, file{name: "deep", dir: ident}),
		"crlf":   commitTree(t, repo, main, text(".GitAttributes", "* eol=crlf\n"), text("a", strings.Repeat("\n", 600))), // as a case-insensitive host reads it
		"utf32":  commitTree(t, repo, main, text(".gitattributes", "* eol=crlf working-tree-encoding=UTF-32\n"), text("a", strings.Repeat("\n", 100))),
		// Words that only look like the attributes.
		"identity": commitTree(t, repo, main, text(".gitattributes", "a identity=x\n"), text("a", strings.Repeat("x", 900))),
	}
	t.Chdir(repo)
	t.Setenv(IdentityEnv, "gastown/furiosa")
	t.Setenv(PatternsEnv, strings.Join(DefaultBranchPatterns, ","))
	t.Setenv(PolecatsEnv, "furiosa")
	t.Setenv(WorktreeGuardEnv, GuardRefuse)
	const wt, other = "refs/heads/polecat/furiosa-wt", "refs/heads/polecat/furiosa-other"
	zero := strings.Repeat("0", 40)
	cases := []struct {
		name, commit, ref string
		bounds            []string // size, files; nil: unset
		want, limit       string   // what the hook says and records; "" accepts
	}{
		{"within", "small", wt, []string{"1000", "10"}, "", ""},
		{"over size", "big", wt, []string{"1000", "10"}, "more than 1000 bytes, over git.max_checkout_size", "git.max_checkout_size"},
		{"over files", "many", wt, []string{"1000", "10"}, "more than 10 files, links and directories, over git.max_checkout_files", "git.max_checkout_files"},
		{"ident", "ident", wt, []string{"1000", "10"}, "(ident) let checkout write up to 18 times that, more than 1000 bytes, over git.max_checkout_size", "git.max_checkout_size"},
		{"nested", "nested", wt, []string{"1000", "10"}, "(ident) let checkout write up to 18 times that", "git.max_checkout_size"},
		{"crlf", "crlf", wt, []string{"1000", "10"}, "(crlf) let checkout write up to 2 times that", "git.max_checkout_size"},
		{"crlf within", "crlf", wt, []string{"1000000", "10"}, "", ""},
		{"encoding", "utf32", wt, []string{"1000", "10"}, "(crlf, working-tree-encoding) let checkout write up to 8 times that", "git.max_checkout_size"},
		{"look-alike", "identity", wt, []string{"1000", "10"}, "", ""},
		{"not checked out", "big", other, []string{"1000", "10"}, "", ""},
		{"not checked out, no bounds", "big", other, nil, "", ""},
		{"no bounds", "small", wt, nil, "hostd gave no valid bounds", ""},
		{"zero bound", "small", wt, []string{"0", "10"}, "hostd gave no valid bounds", ""},
		{"deleted", "", wt, nil, "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.bounds == nil {
				t.Setenv(MaxCheckoutSizeEnv, "")
				os.Unsetenv(MaxCheckoutSizeEnv)
			} else {
				t.Setenv(MaxCheckoutSizeEnv, c.bounds[0])
				t.Setenv(MaxCheckoutFilesEnv, c.bounds[1])
			}
			record := filepath.Join(t.TempDir(), "limit")
			t.Setenv(LimitEnv, record)
			newID := zero
			if c.commit != "" {
				newID = commits[c.commit]
			}
			var stderr bytes.Buffer
			code := RunPreReceive(strings.NewReader(main+" "+newID+" "+c.ref+"\n"), &stderr)
			if c.want == "" && (code != 0 || stderr.Len() > 0) {
				t.Fatalf("refused: exit %d, %q", code, stderr.String())
			}
			if c.want != "" && (code == 0 || !strings.Contains(stderr.String(), c.want)) {
				t.Fatalf("exit %d, %q; want a refusal saying %q", code, stderr.String(), c.want)
			}
			got, _ := os.ReadFile(record)
			if strings.TrimSpace(string(got)) != c.limit {
				t.Errorf("limit recorded: %q, want %q", got, c.limit)
			}
		})
	}
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
	gitIn(t, "", nil, "clone", "-q", "--branch", branch, srv.URL+"/v1/git/gastown", work)
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
	wt, main := worktreeRepo(t, repo)
	const branch = "polecat/furiosa-wt"
	work, _ := serveClone(t, town, branch, func(cfg *Config) { cfg.MaxPushSize, cfg.MaxCheckoutSize = 1<<20, 512<<10 })
	head := func() string { return gitIn(t, repo, nil, "rev-parse", "refs/heads/"+branch) }
	push := func(commit, ref string) (string, error) {
		return tryGit(t, work, nil, "push", "origin", commit+":refs/heads/"+ref)
	}

	// Within the bounds: the ref moves and the worktree has the files.
	data := make([]byte, 100<<10)
	_, _ = rand.Read(data)
	want := commitTree(t, work, main, text("README", "hello\n"), file{name: "work.bin", data: bytes.NewReader(data)})
	if out, err := push(want, branch); err != nil {
		t.Fatalf("push of the checked-out branch: %v\n%s", err, out)
	}
	if got := gitIn(t, wt, nil, "rev-parse", "HEAD"); got != want {
		t.Fatalf("worktree at %s after the push, want %s", got, want)
	}
	if b, err := os.ReadFile(filepath.Join(wt, "work.bin")); err != nil || !bytes.Equal(b, data) {
		t.Fatalf("the pushed file in the worktree: %d bytes, %v", len(b), err)
	}
	if st := gitIn(t, wt, nil, "status", "--porcelain"); st != "" {
		t.Errorf("worktree not clean after the push:\n%s", st)
	}

	// Over the bound: refused before anything is written.
	hits := limits.Total()
	big := make([]byte, 700<<10)
	_, _ = rand.Read(big)
	bomb := time.Now()
	for name, f := range map[string]file{"700 KiB of random bytes": {name: "big.bin", data: bytes.NewReader(big)}, "64 MiB of zeros": {name: "zeros.bin", data: zeros(64 << 20)}} {
		c := commitTree(t, work, want, text("README", "hello\n"), f)
		out, err := push(c, branch)
		if err == nil || !strings.Contains(out, "git.max_checkout_size") {
			t.Fatalf("%s: push over git.max_checkout_size: %v\n%s", name, err, out)
		}
		if got := head(); got != want {
			t.Errorf("%s: the refused push moved the branch to %s", name, got)
		}
		if _, err := os.Stat(filepath.Join(wt, f.name)); err == nil {
			t.Errorf("%s: the refused push wrote into the worktree", name)
		}
	}
	t.Logf("refusals over git.max_checkout_size: %v", time.Since(bomb))
	if got := limits.Total() - hits; got != 2 {
		t.Errorf("%d limit hits counted for two refused pushes", got)
	}

	// Not checked out anywhere: not bound by the checkout settings.
	c := commitTree(t, work, want, file{name: "zeros.bin", data: zeros(8 << 20)})
	if out, err := push(c, "polecat/furiosa-elsewhere"); err != nil {
		t.Fatalf("push of a branch checked out nowhere: %v\n%s", err, out)
	}

	// The host's own edit in the worktree: git refuses the push, and the
	// edit and the branch stay.
	if err := os.WriteFile(filepath.Join(wt, "README"), []byte("the operator's edit\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c = commitTree(t, work, want, text("README", "hello\n"), text("more", "more\n"))
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
