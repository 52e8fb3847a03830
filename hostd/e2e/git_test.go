package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/polecat-sidecar/sidecar/hostd/api"

	"github.com/polecat-sidecar/sidecar/hostd/state"
	"github.com/polecat-sidecar/sidecar/tunnel/tunneltest"
)

func TestGitCloneFetchPull(t *testing.T) {
	g := NewGitTown(t, "--git-refresh-age", "1ms")
	url := g.Polecat(t, "furiosa")
	for _, c := range []struct {
		name string
		args []string
	}{
		{"v0 full", []string{"-c", "protocol.version=0", "clone", "-q", url}},
		{"v2 full", []string{"-c", "protocol.version=2", "clone", "-q", url}},
		{"shallow", []string{"clone", "-q", "--depth", "1", url}},
		{"partial", []string{"clone", "-q", "--filter=blob:none", url}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "w")
			g.Git(t, "", append(c.args, dir)...)
			if b, err := os.ReadFile(filepath.Join(dir, "README")); err != nil || string(b) != "hello\n" {
				t.Fatalf("checkout: %q %v", b, err)
			}
			if c.name == "partial" {
				if cfg := g.Git(t, dir, "config", "remote.origin.partialclonefilter"); strings.TrimSpace(cfg) != "blob:none" {
					t.Errorf("not a partial clone: %q", cfg)
				}
			}
		})
	}
	// The operator's origin moves on; a fetch through the tunnel refreshes
	// .repo.git from it first, then pull brings it in.
	work := filepath.Join(t.TempDir(), "w")
	g.Git(t, "", "clone", "-q", url, work)
	up := filepath.Join(t.TempDir(), "up")
	g.Git(t, "", "clone", "-q", g.Origin, up)
	want := g.Commit(t, up, "upstream-change", 100)
	g.Git(t, up, "push", "-q", "origin", "main")
	time.Sleep(5 * time.Millisecond)
	g.Git(t, work, "pull", "-q", "--ff-only")
	if got := strings.TrimSpace(g.Git(t, work, "rev-parse", "HEAD")); got != want {
		t.Fatalf("after pull HEAD is %s, want origin's %s", got, want)
	}
	// With origin unreachable the fetch is served from what is there, and
	// the operator is told.
	_ = os.Rename(g.Origin, g.Origin+".away")
	defer os.Rename(g.Origin+".away", g.Origin)
	time.Sleep(5 * time.Millisecond)
	g.Git(t, work, "fetch", "-q")
	if !strings.Contains(g.Hostd.Output(), "refreshing from origin failed; serving the fetch from what is there") {
		t.Error("no warning logged for the unreachable origin")
	}
}

// TestGitKeepAliveAndV2 checks that one connection carries several
// requests (one stream per connection) and that protocol v2 is what git
// gets when it asks for it.
func TestGitKeepAliveAndV2(t *testing.T) {
	g := NewGitTown(t)
	url := g.Polecat(t, "furiosa")
	dials := 0
	tr := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials++
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}}
	hc := &http.Client{Transport: tr}
	for i := range 3 {
		req, _ := http.NewRequest("GET", url+"/info/refs?service=git-upload-pack", nil)
		req.Header.Set("Git-Protocol", "version=2")
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !bytes.Contains(body, []byte("version 2")) || bytes.Contains(body, []byte("# service=")) {
			t.Fatalf("request %d: status %d, body %q; want a v2 capability advertisement", i, resp.StatusCode, body)
		}
	}
	if dials != 1 {
		t.Errorf("%d connections for 3 requests; keep-alive does not work through the tunnel", dials)
	}
}

// TestGitStreamsPacks pushes and clones a 64 MiB pack and checks that
// hostd does not hold it in memory (the agent copies bytes with a fixed
// buffer; the relay test measures it).
func TestGitStreamsPacks(t *testing.T) {
	g := NewGitTown(t, "--git-upstream=false", "--git-max-push-size", strconv.Itoa(128<<20))
	url := g.Polecat(t, "furiosa")
	work := filepath.Join(t.TempDir(), "w")
	g.Git(t, "", "clone", "-q", url, work)
	g.Git(t, work, "push", "-q", "origin", "HEAD:polecat/furiosa-warm") // warm up
	hostd0 := highWater(t, g.Hostd.Cmd.Process.Pid)
	want := g.Commit(t, work, "big", 64<<20)
	g.Git(t, work, "-c", "http.postBuffer=1048576", "push", "-q", "origin", "HEAD:polecat/furiosa-big")
	again := filepath.Join(t.TempDir(), "again")
	g.Git(t, "", "clone", "-q", "--branch", "polecat/furiosa-big", url, again)
	if got := strings.TrimSpace(g.Git(t, again, "rev-parse", "HEAD")); got != want {
		t.Fatalf("cloned %s, want %s", got, want)
	}
	hostd1 := highWater(t, g.Hostd.Cmd.Process.Pid)
	t.Logf("hostd peak RSS %d -> %d KiB over a 64 MiB push and clone", hostd0, hostd1)
	if hostd1-hostd0 > 32<<10 {
		t.Errorf("hostd grew by %d KiB: the pack is being held, not streamed", hostd1-hostd0)
	}
}

func TestGitManyRefsGzip(t *testing.T) {
	g := NewGitTown(t, "--log-level", "debug")
	var b strings.Builder
	head := strings.TrimSpace(g.Git(t, g.Repo, "rev-parse", "main"))
	for i := range 600 {
		fmt.Fprintf(&b, "create refs/heads/feature/branch-%04d %s\n", i, head)
	}
	cmd := exec.Command("git", "-C", g.Repo, "update-ref", "--stdin")
	cmd.Stdin = strings.NewReader(b.String())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	url := g.Polecat(t, "furiosa")
	dir := filepath.Join(t.TempDir(), "w")
	g.Git(t, "", "-c", "protocol.version=0", "clone", "-q", "--mirror", url, dir)
	if n := strings.Count(g.Refs(t, dir), "refs/heads/feature/"); n != 600 {
		t.Fatalf("mirror has %d feature branches, want 600", n)
	}
	if !strings.Contains(g.Hostd.Output(), "gzip-encoded") {
		t.Error("no gzip-encoded request body was seen; the test did not exercise gzip")
	}
}

func TestGitPushPolicy(t *testing.T) {
	g := NewGitTown(t, "--git-upstream=false")
	url := g.Polecat(t, "furiosa")
	work := filepath.Join(t.TempDir(), "w")
	g.Git(t, "", "clone", "-q", url, work)

	// Allowed: Gas Town's three naming schemes, force, delete.
	c1 := g.Commit(t, work, "one", 10)
	g.Git(t, work, "push", "-q", "origin", "HEAD:polecat/furiosa-abc")
	g.Git(t, work, "push", "-q", "origin", "HEAD:polecat/furiosa/gt-42@1700000000")
	g.Git(t, work, "reset", "-q", "--hard", "HEAD~1")
	c2 := g.Commit(t, work, "two", 10)
	g.Git(t, work, "push", "-q", "--force", "origin", "HEAD:polecat/furiosa-abc")
	if got := strings.TrimSpace(g.Git(t, g.Repo, "rev-parse", "refs/heads/polecat/furiosa-abc")); got != c2 || got == c1 {
		t.Fatalf("force push: branch at %s, want %s", got, c2)
	}
	g.Git(t, work, "push", "-q", "origin", ":polecat/furiosa/gt-42@1700000000")
	if strings.Contains(g.Refs(t, g.Repo), "gt-42") {
		t.Fatal("own branch not deleted")
	}
	// Gas Town's fallback name (a ref cannot be both a branch and a
	// directory of branches, hence after the delete).
	g.Git(t, work, "push", "-q", "origin", "HEAD:polecat/furiosa")

	// A symbolic ref that looks like furiosa's branch but points at main.
	g.Git(t, g.Repo, "symbolic-ref", "refs/heads/polecat/furiosa-sym", "refs/heads/main")
	g.Git(t, g.Repo, "symbolic-ref", "refs/heads/polecat/furiosa-dangle", "refs/heads/release")
	g.Git(t, work, "tag", "v1")
	refused := []struct{ spec, want string }{
		{"HEAD:main", "not a polecat branch"},
		{"HEAD:feature/x", "not a polecat branch"},
		{"HEAD:polecat/nux-abc", "another polecat's branch"},
		{"HEAD:polecat/nux/gt-1", "another polecat's branch"},
		{"HEAD:polecat/furiosa2-x", "another polecat's branch"},
		{"HEAD:polecat/furiosa-", "another polecat's branch"},
		{"HEAD:polecat/furiosaX/y", "another polecat's branch"},
		{"refs/tags/v1:refs/tags/v1", "tags are not pushed"},
		{"HEAD:refs/notes/commits", "outside refs/heads/polecat/"},
		{"HEAD:refs/sidecar/x", "outside refs/heads/polecat/"},
		{"HEAD:polecat/furiosa-sym", "symbolic ref to refs/heads/main"},
		{"HEAD:polecat/furiosa-dangle", "symbolic ref to refs/heads/release"},
	}
	rogue := g.Commit(t, work, "rogue", 50000)
	for _, c := range refused {
		t.Run(c.spec, func(t *testing.T) {
			before := g.Refs(t, g.Repo)
			out, err := g.TryGit(work, "push", "origin", c.spec)
			if err == nil || !strings.Contains(out, c.want) || !strings.Contains(out, "nothing was changed") {
				t.Fatalf("push %s: err %v, output:\n%s", c.spec, err, out)
			}
			if after := g.Refs(t, g.Repo); after != before {
				t.Errorf("refs changed:\nbefore %s\nafter  %s", before, after)
			}
			if _, err := g.TryGit(g.Repo, "cat-file", "-e", rogue); err == nil {
				t.Error("the refused push left its objects behind")
			}
		})
	}
	// main did not move through the symref, and release was not created
	// through the dangling one.
	if got := strings.TrimSpace(g.Git(t, g.Repo, "rev-parse", "main")); got == rogue {
		t.Fatal("main moved")
	}
	if _, err := g.TryGit(g.Repo, "rev-parse", "--verify", "-q", "refs/heads/release"); err == nil {
		t.Fatal("release was created through a dangling symref")
	}
}

// TestGitBranchOwnershipWithDashes: names that prefix each other, as Gas
// Town's pool makes them, each push exactly their own branches; a refusal
// names the owner and what the pusher may push.
func TestGitBranchOwnershipWithDashes(t *testing.T) {
	g := NewGitTown(t, "--git-upstream=false")
	urls := map[string]string{}
	for _, name := range []string{"bullet", "bullet-farmer", "nux", "nux2"} {
		urls[name] = g.Polecat(t, name)
	}
	work := map[string]string{}
	for name, url := range urls {
		work[name] = filepath.Join(t.TempDir(), name)
		g.Git(t, "", "clone", "-q", url, work[name])
		g.Commit(t, work[name], name, 10)
	}
	for _, c := range []struct{ name, branch, refusal string }{
		{"bullet-farmer", "polecat/bullet-farmer-mfx3k2a1", ""},
		{"bullet-farmer", "polecat/bullet-farmer", ""},
		{"bullet", "polecat/bullet-mfx3k2a1", ""},
		{"bullet", "polecat/bullet", ""},
		{"bullet", "polecat/bullet-farmer-x", "belongs to gastown/bullet-farmer"},
		{"bullet", "polecat/bullet-farmer", "belongs to gastown/bullet-farmer"},
		{"bullet-farmer", "polecat/bullet-x", "belongs to gastown/bullet"},
		{"nux2", "polecat/nux2-a", ""},
		{"nux2", "polecat/nux2/gt-7@mfx3k2a1", ""},
		{"nux", "polecat/nux-a", ""},
		{"nux", "polecat/nux2-b", "belongs to gastown/nux2"},
		{"nux2", "polecat/nux-b", "belongs to gastown/nux"},
	} {
		t.Run(c.name+" "+c.branch, func(t *testing.T) {
			out, err := g.TryGit(work[c.name], "push", "--force", "origin", "HEAD:"+c.branch)
			if c.refusal == "" {
				if err != nil {
					t.Fatalf("refused: %v\n%s", err, out)
				}
				return
			}
			may := "gastown/" + c.name + " may push only polecat/" + c.name + ", polecat/" + c.name + "/*, polecat/" + c.name + "-*"
			if err == nil || !strings.Contains(out, "refusing refs/heads/"+c.branch) || !strings.Contains(out, c.refusal) || !strings.Contains(out, may) {
				t.Fatalf("err %v, output:\n%s", err, out)
			}
		})
	}
}

// TestGitHookFailsClosed pushes straight into .repo.git with hostd's hooks
// but not through hostd: no identity, so nothing is accepted.
func TestGitHookFailsClosed(t *testing.T) {
	g := NewGitTown(t)
	work := filepath.Join(t.TempDir(), "w")
	g.Git(t, "", "clone", "-q", g.Repo, work)
	g.Commit(t, work, "x", 10)
	hooks := state.For(g.Dir).Hooks()
	before := g.Refs(t, g.Repo)
	out, err := g.TryGit(work, "push", "--receive-pack=git -c core.hooksPath="+hooks+" receive-pack", "origin", "HEAD:refs/heads/polecat/furiosa-x")
	if err == nil || !strings.Contains(out, "no polecat identity") {
		t.Fatalf("push without identity: %v\n%s", err, out)
	}
	if g.Refs(t, g.Repo) != before {
		t.Fatal("refs changed")
	}
	// And a forged identity through the environment of a direct push is
	// not how hostd is reached: only hostd sets it, from the certificate.
	cmd := exec.Command(filepath.Join(hooks, "pre-receive"))
	cmd.Dir = g.Repo
	cmd.Stdin = strings.NewReader("0000 1111 refs/heads/polecat/furiosa-x\n")
	cmd.Env = append(GitEnv(g.Home), "SIDECAR_PUSH_IDENTITY=../../etc")
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "no polecat identity") {
		t.Fatalf("hook with a malformed identity: %v %s", err, out)
	}
}

func TestGitConcurrentPushes(t *testing.T) {
	g := NewGitTown(t, "--git-upstream=false")
	names := []string{"ace", "bo", "cy", "di", "ed", "fy", "gus", "hal", "ivy", "jo"}
	urls := make([]string, len(names))
	for i, n := range names {
		urls[i] = g.Polecat(t, n)
	}
	var wg sync.WaitGroup
	errs := make(chan error, len(names))
	for i, n := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			work := filepath.Join(t.TempDir(), "w")
			if out, err := g.TryGit("", "clone", "-q", urls[i], work); err != nil {
				errs <- fmt.Errorf("%s clone: %v %s", n, err, out)
				return
			}
			_ = os.WriteFile(filepath.Join(work, n), []byte(n), 0o644)
			g.TryGit(work, "add", ".")
			g.TryGit(work, "commit", "-q", "-m", n)
			if out, err := g.TryGit(work, "push", "-q", "origin", "HEAD:polecat/"+n+"-work"); err != nil {
				errs <- fmt.Errorf("%s push: %v %s", n, err, out)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	refs := g.Refs(t, g.Repo)
	for _, n := range names {
		if !strings.Contains(refs, "refs/heads/polecat/"+n+"-work") {
			t.Errorf("%s's branch did not land", n)
		}
	}
	if out := g.Git(t, g.Repo, "fsck", "--strict"); strings.Contains(out, "error") {
		t.Errorf("fsck: %s", out)
	}
}

func TestGitHostileRequests(t *testing.T) {
	g := NewGitTown(t)
	url := g.Polecat(t, "furiosa")
	base := strings.TrimSuffix(url, "/v1/git/gastown")
	cases := []struct {
		method, path string
		header       map[string]string
		want         int
	}{
		{"GET", "/v1/git/gastown/HEAD", nil, 404},
		{"GET", "/v1/git/gastown/objects/info/packs", nil, 404},
		{"GET", "/v1/git/gastown/info/refs", nil, 403},
		{"GET", "/v1/git/gastown/info/refs?service=git-upload-archive", nil, 403},
		{"GET", "/v1/git/other/info/refs?service=git-upload-pack", nil, 403},
		{"GET", "/v1/git/../../etc/passwd", nil, 404},
		{"GET", "/v1/git/gas%2Ftown/info/refs?service=git-upload-pack", nil, 404},
		{"GET", "/v1/exec", nil, 404},
		{"POST", "/v1/git/gastown/git-upload-pack", map[string]string{"Content-Type": "text/plain"}, 415},
		{"POST", "/v1/git/gastown/git-upload-pack", map[string]string{"Content-Type": "application/x-git-upload-pack-request", "Content-Encoding": "br"}, 400},
		{"POST", "/v1/git/gastown/git-upload-pack", map[string]string{"Content-Type": "application/x-git-upload-pack-request", "Content-Encoding": "gzip"}, 400},
		{"GET", "/v1/git/gastown/info/refs?service=git-upload-pack", map[string]string{"Git-Protocol": "version=2:evil=1"}, 400},
		{"GET", "/v1/git/gastown/info/refs?service=git-upload-pack", map[string]string{"Git-Protocol": "version=3"}, 400},
		{"PUT", "/v1/git/gastown/git-receive-pack", nil, 404},
	}
	for _, c := range cases {
		req, _ := http.NewRequest(c.method, base+c.path, strings.NewReader("not gzip"))
		for k, v := range c.header {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Errorf("%s %s: %v", c.method, c.path, err)
			continue
		}
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("%s %s %v: status %d, want %d", c.method, c.path, c.header, resp.StatusCode, c.want)
		}
	}
	// A rig with no repository here: git shows a clear "not found".
	other := g.Issue("norepo/furiosa", time.Hour)
	gitAddr := tunneltest.FreeAddr(t)
	Start(t, AgentEnv(g.Addr, other), "gt-agent", "up", "--git-listen", gitAddr)
	g.WaitStatus(10*time.Second, Connected("furiosa", ""))
	g.WaitStatus(10*time.Second, func(st api.Status) bool { return Connected("furiosa", "")(st) && len(st.Polecats) == 2 })
	out, err := g.TryGit("", "ls-remote", "http://"+gitAddr+"/v1/git/norepo")
	if err == nil || !strings.Contains(out, "no repository for rig norepo") {
		t.Errorf("unknown rig: %v %s", err, out)
	}
}

// TestGitPushUpdatesHostWorktree: Gas Town checks a polecat's branch out
// in its host worktree (a linked worktree of .repo.git). A push of that
// branch from the container lands (git would otherwise refuse: "branch is
// currently checked out") and brings the host worktree to it, so a
// relayed 'gt done' reading git state there sees the container's commits.
// A push whose checkout there would go over git.max_checkout_size (here
// 1 MiB) is refused with the setting named, among them 32 MiB of zeros
// whose pack is some 32 KiB; with changes of the host's own in that
// worktree, the push is refused and the changes stay. Neither refusal
// moves the branch or writes into the worktree.
func TestGitPushUpdatesHostWorktree(t *testing.T) {
	t.Parallel()
	g := NewGitTown(t, "--git-upstream=false", "--git-max-checkout-size", "1048576")
	url := g.Polecat(t, "furiosa")
	host := filepath.Join(g.Dir, "gastown", "polecats", "furiosa", "gastown")
	const branch = "polecat/furiosa-mk3x9a"
	g.Git(t, g.Repo, "worktree", "add", "-q", "-b", branch, host, "main")
	work := filepath.Join(t.TempDir(), "w")
	g.Git(t, "", "clone", "-q", "--branch", branch, url, work)

	want := g.Commit(t, work, "work", 100)
	g.Git(t, work, "push", "-q", "origin", "HEAD:"+branch)
	if got := strings.TrimSpace(g.Git(t, host, "rev-parse", "HEAD")); got != want {
		t.Fatalf("host worktree at %s after the push, want %s", got, want)
	}
	if _, err := os.Stat(filepath.Join(host, "work.bin")); err != nil {
		t.Fatalf("the pushed file is not in the host worktree: %v", err)
	}
	if st := g.Git(t, host, "status", "--porcelain"); st != "" {
		t.Errorf("host worktree not clean after the push:\n%s", st)
	}
	unchanged := func(what string) {
		t.Helper()
		if got := strings.TrimSpace(g.Git(t, g.Repo, "rev-parse", branch)); got != want {
			t.Errorf("%s: the refused push moved %s to %s", what, branch, got)
		}
		if got := strings.TrimSpace(g.Git(t, host, "rev-parse", "HEAD")); got != want {
			t.Errorf("%s: the refused push moved the host worktree to %s", what, got)
		}
	}

	// Over git.max_checkout_size: 2 MiB of random bytes, then 32 MiB of
	// zeros. The zeros are made with plumbing: the polecat need not write
	// them to its own disk either.
	g.Commit(t, work, "big", 2<<20)
	out, err := g.TryGit(work, "push", "origin", "HEAD:"+branch)
	if err == nil || !strings.Contains(out, "git.max_checkout_size") {
		t.Fatalf("push over git.max_checkout_size: %v\n%s", err, out)
	}
	unchanged("2 MiB")
	if _, err := os.Stat(filepath.Join(host, "big.bin")); err == nil {
		t.Error("the refused push wrote into the host worktree")
	}
	g.Git(t, work, "reset", "-q", "--hard", want)
	cmd := exec.Command("sh", "-c", `blob=$(head -c 33554432 /dev/zero | git hash-object -w --stdin) &&
		tree=$( (git ls-tree HEAD; printf '100644 blob %s\tzeros.bin\n' "$blob") | git mktree) &&
		git commit-tree -p HEAD -m zeros "$tree"`)
	cmd.Dir, cmd.Env = work, GitEnv(g.Home)
	bomb, err := cmd.Output()
	if err != nil {
		t.Fatalf("making the zeros: %v", err)
	}
	out, err = g.TryGit(work, "push", "origin", strings.TrimSpace(string(bomb))+":refs/heads/"+branch)
	if err == nil || !strings.Contains(out, "git.max_checkout_size") {
		t.Fatalf("32 MiB of zeros into the host worktree: %v\n%s", err, out)
	}
	unchanged("zeros")
	t.Logf("refused:\n%s", out)

	// The host's own edit in the worktree: the next push is refused and
	// the edit stays.
	_ = os.WriteFile(filepath.Join(host, "README"), []byte("the operator's edit\n"), 0o644)
	g.Commit(t, work, "more", 100)
	out, err = g.TryGit(work, "push", "origin", "HEAD:"+branch)
	if err == nil || !strings.Contains(out, "unstaged changes") {
		t.Fatalf("push over a host worktree with changes: %v\n%s", err, out)
	}
	if b, _ := os.ReadFile(filepath.Join(host, "README")); string(b) != "the operator's edit\n" {
		t.Errorf("the host's edit became %q", b)
	}
	unchanged("host's edit")
}
