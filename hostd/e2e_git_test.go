package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/polecat-sidecar/sidecar/hostd/control"
	"github.com/polecat-sidecar/sidecar/hostd/state"
	"github.com/polecat-sidecar/sidecar/tunnel/tunneltest"
)

// gitTown is a town whose rig "gastown" has a .repo.git cloned from a local
// "origin" bare repository, with hostd serving it.
type gitTown struct {
	*town
	hostd  *proc
	addr   string
	origin string
	repo   string
	home   string
}

// gitEnv isolates git from the machine's configuration.
func gitEnv(home string) []string {
	return append(os.Environ(), "HOME="+home, "GIT_CONFIG_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
}

// git runs git in dir and returns its combined output, failing the test on
// error.
func (g *gitTown) git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	out, err := g.tryGit(dir, args...)
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

func (g *gitTown) tryGit(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = gitEnv(g.home)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func newGitTown(t testing.TB, serve ...string) *gitTown {
	g := &gitTown{town: newTown(t), home: t.TempDir()}
	g.origin = filepath.Join(t.TempDir(), "origin.git")
	seed := t.TempDir()
	g.git(t, seed, "init", "-q", "-b", "main")
	_ = os.WriteFile(filepath.Join(seed, "README"), []byte("hello\n"), 0o644)
	g.git(t, seed, "add", ".")
	g.git(t, seed, "commit", "-q", "-m", "first")
	g.git(t, seed, "clone", "-q", "--bare", seed, g.origin)
	g.repo = filepath.Join(g.dir, "gastown", ".repo.git")
	g.git(t, seed, "clone", "-q", "--bare", g.origin, g.repo)
	g.hostd, g.addr = g.serve(serve...)
	return g
}

// polecat starts an agent for gastown/<name> (with extra flags) and returns
// its git origin URL.
func (g *gitTown) polecat(t testing.TB, name string, flags ...string) string {
	gitAddr := tunneltest.FreeAddr(t)
	start(t, agentEnv(g.addr, g.issue("gastown/"+name, time.Hour)), "gt-agent", append([]string{"up", "--git-listen", gitAddr}, flags...)...)
	g.waitStatus(10*time.Second, connected(name, ""))
	return "http://" + gitAddr + "/v1/git/gastown"
}

// refs is the repository's refs, one "sha name" per line.
func (g *gitTown) refs(t testing.TB, repo string) string {
	return g.git(t, repo, "for-each-ref", "--format=%(objectname) %(refname) %(symref)")
}

// commit makes a commit in dir with content of the given size and returns
// its id.
func (g *gitTown) commit(t testing.TB, dir, msg string, size int) string {
	data := make([]byte, size)
	_, _ = rand.Read(data)
	_ = os.WriteFile(filepath.Join(dir, msg+".bin"), data, 0o644)
	g.git(t, dir, "add", ".")
	g.git(t, dir, "commit", "-q", "-m", msg)
	return strings.TrimSpace(g.git(t, dir, "rev-parse", "HEAD"))
}

func TestGitCloneFetchPull(t *testing.T) {
	g := newGitTown(t, "--git-refresh-age", "1ms")
	url := g.polecat(t, "furiosa")
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
			g.git(t, "", append(c.args, dir)...)
			if b, err := os.ReadFile(filepath.Join(dir, "README")); err != nil || string(b) != "hello\n" {
				t.Fatalf("checkout: %q %v", b, err)
			}
			if c.name == "partial" {
				if cfg := g.git(t, dir, "config", "remote.origin.partialclonefilter"); strings.TrimSpace(cfg) != "blob:none" {
					t.Errorf("not a partial clone: %q", cfg)
				}
			}
		})
	}
	// The operator's origin moves on; a fetch through the tunnel refreshes
	// .repo.git from it first, then pull brings it in.
	work := filepath.Join(t.TempDir(), "w")
	g.git(t, "", "clone", "-q", url, work)
	up := filepath.Join(t.TempDir(), "up")
	g.git(t, "", "clone", "-q", g.origin, up)
	want := g.commit(t, up, "upstream-change", 100)
	g.git(t, up, "push", "-q", "origin", "main")
	time.Sleep(5 * time.Millisecond)
	g.git(t, work, "pull", "-q", "--ff-only")
	if got := strings.TrimSpace(g.git(t, work, "rev-parse", "HEAD")); got != want {
		t.Fatalf("after pull HEAD is %s, want origin's %s", got, want)
	}
	// With origin unreachable the fetch is served from what is there, and
	// the operator is told.
	_ = os.Rename(g.origin, g.origin+".away")
	defer os.Rename(g.origin+".away", g.origin)
	time.Sleep(5 * time.Millisecond)
	g.git(t, work, "fetch", "-q")
	if !strings.Contains(g.hostd.output(), "refreshing from origin failed; serving the fetch from what is there") {
		t.Error("no warning logged for the unreachable origin")
	}
}

// TestGitKeepAliveAndV2 checks that one connection carries several
// requests (one stream per connection) and that protocol v2 is what git
// gets when it asks for it.
func TestGitKeepAliveAndV2(t *testing.T) {
	g := newGitTown(t)
	url := g.polecat(t, "furiosa")
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
	g := newGitTown(t, "--git-upstream=false")
	url := g.polecat(t, "furiosa")
	work := filepath.Join(t.TempDir(), "w")
	g.git(t, "", "clone", "-q", url, work)
	g.git(t, work, "push", "-q", "origin", "HEAD:polecat/furiosa-warm") // warm up
	hostd0 := highWater(t, g.hostd.cmd.Process.Pid)
	want := g.commit(t, work, "big", 64<<20)
	g.git(t, work, "-c", "http.postBuffer=1048576", "push", "-q", "origin", "HEAD:polecat/furiosa-big")
	again := filepath.Join(t.TempDir(), "again")
	g.git(t, "", "clone", "-q", "--branch", "polecat/furiosa-big", url, again)
	if got := strings.TrimSpace(g.git(t, again, "rev-parse", "HEAD")); got != want {
		t.Fatalf("cloned %s, want %s", got, want)
	}
	hostd1 := highWater(t, g.hostd.cmd.Process.Pid)
	t.Logf("hostd peak RSS %d -> %d KiB over a 64 MiB push and clone", hostd0, hostd1)
	if hostd1-hostd0 > 32<<10 {
		t.Errorf("hostd grew by %d KiB: the pack is being held, not streamed", hostd1-hostd0)
	}
}

func TestGitManyRefsGzip(t *testing.T) {
	g := newGitTown(t, "--log-level", "debug")
	var b strings.Builder
	head := strings.TrimSpace(g.git(t, g.repo, "rev-parse", "main"))
	for i := range 600 {
		fmt.Fprintf(&b, "create refs/heads/feature/branch-%04d %s\n", i, head)
	}
	cmd := exec.Command("git", "-C", g.repo, "update-ref", "--stdin")
	cmd.Stdin = strings.NewReader(b.String())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	url := g.polecat(t, "furiosa")
	dir := filepath.Join(t.TempDir(), "w")
	g.git(t, "", "-c", "protocol.version=0", "clone", "-q", "--mirror", url, dir)
	if n := strings.Count(g.refs(t, dir), "refs/heads/feature/"); n != 600 {
		t.Fatalf("mirror has %d feature branches, want 600", n)
	}
	if !strings.Contains(g.hostd.output(), "gzip-encoded") {
		t.Error("no gzip-encoded request body was seen; the test did not exercise gzip")
	}
}

func TestGitPushPolicy(t *testing.T) {
	g := newGitTown(t, "--git-upstream=false")
	url := g.polecat(t, "furiosa")
	work := filepath.Join(t.TempDir(), "w")
	g.git(t, "", "clone", "-q", url, work)

	// Allowed: both naming schemes, force, delete.
	c1 := g.commit(t, work, "one", 10)
	g.git(t, work, "push", "-q", "origin", "HEAD:polecat/furiosa-abc")
	g.git(t, work, "push", "-q", "origin", "HEAD:polecat/furiosa/gt-42@1700000000")
	g.git(t, work, "reset", "-q", "--hard", "HEAD~1")
	c2 := g.commit(t, work, "two", 10)
	g.git(t, work, "push", "-q", "--force", "origin", "HEAD:polecat/furiosa-abc")
	if got := strings.TrimSpace(g.git(t, g.repo, "rev-parse", "refs/heads/polecat/furiosa-abc")); got != c2 || got == c1 {
		t.Fatalf("force push: branch at %s, want %s", got, c2)
	}
	g.git(t, work, "push", "-q", "origin", ":polecat/furiosa/gt-42@1700000000")
	if strings.Contains(g.refs(t, g.repo), "gt-42") {
		t.Fatal("own branch not deleted")
	}

	// A symbolic ref that looks like furiosa's branch but points at main.
	g.git(t, g.repo, "symbolic-ref", "refs/heads/polecat/furiosa-sym", "refs/heads/main")
	g.git(t, g.repo, "symbolic-ref", "refs/heads/polecat/furiosa-dangle", "refs/heads/release")
	g.git(t, work, "tag", "v1")
	refused := []struct{ spec, want string }{
		{"HEAD:main", "not a polecat branch"},
		{"HEAD:feature/x", "not a polecat branch"},
		{"HEAD:polecat/nux-abc", "another polecat's branch"},
		{"HEAD:polecat/nux/gt-1", "another polecat's branch"},
		{"HEAD:polecat/furiosa2-x", "another polecat's branch"},
		{"HEAD:polecat/furiosa", "another polecat's branch"},
		{"HEAD:polecat/furiosa-", "another polecat's branch"},
		{"HEAD:polecat/furiosaX/y", "another polecat's branch"},
		{"refs/tags/v1:refs/tags/v1", "tags are not pushed"},
		{"HEAD:refs/notes/commits", "outside refs/heads/polecat/"},
		{"HEAD:refs/sidecar/x", "outside refs/heads/polecat/"},
		{"HEAD:polecat/furiosa-sym", "symbolic ref to refs/heads/main"},
		{"HEAD:polecat/furiosa-dangle", "symbolic ref to refs/heads/release"},
	}
	rogue := g.commit(t, work, "rogue", 50000)
	for _, c := range refused {
		t.Run(c.spec, func(t *testing.T) {
			before := g.refs(t, g.repo)
			out, err := g.tryGit(work, "push", "origin", c.spec)
			if err == nil || !strings.Contains(out, c.want) || !strings.Contains(out, "nothing was changed") {
				t.Fatalf("push %s: err %v, output:\n%s", c.spec, err, out)
			}
			if after := g.refs(t, g.repo); after != before {
				t.Errorf("refs changed:\nbefore %s\nafter  %s", before, after)
			}
			if _, err := g.tryGit(g.repo, "cat-file", "-e", rogue); err == nil {
				t.Error("the refused push left its objects behind")
			}
		})
	}
	// main did not move through the symref, and release was not created
	// through the dangling one.
	if got := strings.TrimSpace(g.git(t, g.repo, "rev-parse", "main")); got == rogue {
		t.Fatal("main moved")
	}
	if _, err := g.tryGit(g.repo, "rev-parse", "--verify", "-q", "refs/heads/release"); err == nil {
		t.Fatal("release was created through a dangling symref")
	}
}

// TestGitHookFailsClosed pushes straight into .repo.git with hostd's hooks
// but not through hostd: no identity, so nothing is accepted.
func TestGitHookFailsClosed(t *testing.T) {
	g := newGitTown(t)
	work := filepath.Join(t.TempDir(), "w")
	g.git(t, "", "clone", "-q", g.repo, work)
	g.commit(t, work, "x", 10)
	hooks := state.For(g.dir).Hooks()
	before := g.refs(t, g.repo)
	out, err := g.tryGit(work, "push", "--receive-pack=git -c core.hooksPath="+hooks+" receive-pack", "origin", "HEAD:refs/heads/polecat/furiosa-x")
	if err == nil || !strings.Contains(out, "no polecat identity") {
		t.Fatalf("push without identity: %v\n%s", err, out)
	}
	if g.refs(t, g.repo) != before {
		t.Fatal("refs changed")
	}
	// And a forged identity through the environment of a direct push is
	// not how hostd is reached: only hostd sets it, from the certificate.
	cmd := exec.Command(filepath.Join(hooks, "pre-receive"))
	cmd.Dir = g.repo
	cmd.Stdin = strings.NewReader("0000 1111 refs/heads/polecat/furiosa-x\n")
	cmd.Env = append(gitEnv(g.home), "SIDECAR_PUSH_IDENTITY=../../etc")
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "no polecat identity") {
		t.Fatalf("hook with a malformed identity: %v %s", err, out)
	}
}

func TestGitConcurrentPushes(t *testing.T) {
	g := newGitTown(t, "--git-upstream=false")
	names := []string{"ace", "bo", "cy", "di", "ed", "fy", "gus", "hal", "ivy", "jo"}
	urls := make([]string, len(names))
	for i, n := range names {
		urls[i] = g.polecat(t, n)
	}
	var wg sync.WaitGroup
	errs := make(chan error, len(names))
	for i, n := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			work := filepath.Join(t.TempDir(), "w")
			if out, err := g.tryGit("", "clone", "-q", urls[i], work); err != nil {
				errs <- fmt.Errorf("%s clone: %v %s", n, err, out)
				return
			}
			_ = os.WriteFile(filepath.Join(work, n), []byte(n), 0o644)
			g.tryGit(work, "add", ".")
			g.tryGit(work, "commit", "-q", "-m", n)
			if out, err := g.tryGit(work, "push", "-q", "origin", "HEAD:polecat/"+n+"-work"); err != nil {
				errs <- fmt.Errorf("%s push: %v %s", n, err, out)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	refs := g.refs(t, g.repo)
	for _, n := range names {
		if !strings.Contains(refs, "refs/heads/polecat/"+n+"-work") {
			t.Errorf("%s's branch did not land", n)
		}
	}
	if out := g.git(t, g.repo, "fsck", "--strict"); strings.Contains(out, "error") {
		t.Errorf("fsck: %s", out)
	}
}

func TestGitUpstreamQueue(t *testing.T) {
	g := newGitTown(t, "--git-upstream-retry", "200ms")
	url := g.polecat(t, "furiosa")
	work := filepath.Join(t.TempDir(), "w")
	g.git(t, "", "clone", "-q", url, work)
	c1 := g.commit(t, work, "one", 10)
	g.git(t, work, "push", "-q", "origin", "HEAD:polecat/furiosa-up")
	waitRef(t, g, g.origin, "refs/heads/polecat/furiosa-up", c1)

	// Origin goes away: the push lands here and waits, with its error shown.
	_ = os.Rename(g.origin, g.origin+".away")
	c2 := g.commit(t, work, "two", 10)
	g.git(t, work, "push", "-q", "origin", "HEAD:polecat/furiosa-up")
	st := g.waitStatus(10*time.Second, func(st control.Status) bool {
		return len(st.Upstream) == 1 && st.Upstream[0].Attempts >= 2 && st.Upstream[0].LastError != ""
	})
	if st.Upstream[0].Branch != "polecat/furiosa-up" || !strings.Contains(st.Upstream[0].LastError, "fatal:") {
		t.Errorf("queued %+v", st.Upstream[0])
	}
	if table := g.run("status"); !strings.Contains(table, "waiting to be pushed upstream") || !strings.Contains(table, "polecat/furiosa-up") {
		t.Errorf("status does not show the queue:\n%s", table)
	}

	// The queue survives a restart of hostd.
	_ = g.hostd.cmd.Process.Signal(syscall.SIGTERM)
	_ = g.hostd.exited(t, 5*time.Second)
	g.hostd = start(t, nil, "hostd", "--town", g.dir, "serve", "--listen", g.addr, "--git-upstream-retry", "200ms")
	g.waitStatus(5*time.Second, func(st control.Status) bool { return len(st.Upstream) == 1 })
	g.waitStatus(10*time.Second, connected("furiosa", ""))

	// Origin is back: delivered, and the queue empties.
	_ = os.Rename(g.origin+".away", g.origin)
	waitRef(t, g, g.origin, "refs/heads/polecat/furiosa-up", c2)
	g.waitStatus(10*time.Second, func(st control.Status) bool { return len(st.Upstream) == 0 })

	// Deleting the branch here deletes it upstream too.
	g.git(t, work, "push", "-q", "origin", ":polecat/furiosa-up")
	waitRef(t, g, g.origin, "refs/heads/polecat/furiosa-up", "")
}

// waitRef waits until ref in repo is at want ("" for absent).
func waitRef(t *testing.T, g *gitTown, repo, ref, want string) {
	t.Helper()
	var got string
	for range 200 {
		out, err := g.tryGit(repo, "rev-parse", "--verify", "--quiet", ref)
		got = strings.TrimSpace(out)
		if (want == "" && err != nil) || (want != "" && got == want) {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s in %s is %q, want %q", ref, repo, got, want)
}

func TestGitKillHostdMidPush(t *testing.T) {
	g := newGitTown(t, "--git-upstream=false")
	url := g.polecat(t, "furiosa")
	work := filepath.Join(t.TempDir(), "w")
	g.git(t, "", "clone", "-q", url, work)
	g.commit(t, work, "big", 60<<20)
	push := exec.Command("git", "push", "origin", "HEAD:polecat/furiosa-big")
	push.Dir, push.Env = work, gitEnv(g.home)
	var out bytes.Buffer
	push.Stdout, push.Stderr = &out, &out
	if err := push.Start(); err != nil {
		t.Fatal(err)
	}
	// Kill hostd once the pack is on its way.
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) && !incoming(g.repo) {
		time.Sleep(5 * time.Millisecond)
	}
	_ = g.hostd.cmd.Process.Kill()
	_ = push.Wait()
	time.Sleep(500 * time.Millisecond) // receive-pack notices its input is gone
	if o, err := g.tryGit(g.repo, "fsck", "--strict"); err != nil {
		t.Fatalf("fsck after hostd died mid-push: %v\n%s", err, o)
	}
	var locks []string
	_ = filepath.WalkDir(g.repo, func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(p, ".lock") {
			locks = append(locks, p)
		}
		return nil
	})
	if len(locks) > 0 {
		t.Errorf("stale locks: %v", locks)
	}
	if strings.Contains(g.refs(t, g.repo), "furiosa-big") {
		t.Log("the push completed before hostd died; the kill came too late to test much")
	}
}

// incoming reports whether receive-pack has a quarantine directory, that
// is, a pack is being received.
func incoming(repo string) bool {
	m, _ := filepath.Glob(filepath.Join(repo, "objects", "*incoming-*"))
	return len(m) > 0
}

func TestGitHostileRequests(t *testing.T) {
	g := newGitTown(t)
	url := g.polecat(t, "furiosa")
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
	other := g.issue("norepo/furiosa", time.Hour)
	gitAddr := tunneltest.FreeAddr(t)
	start(t, agentEnv(g.addr, other), "gt-agent", "up", "--git-listen", gitAddr)
	g.waitStatus(10*time.Second, connected("furiosa", ""))
	g.waitStatus(10*time.Second, func(st control.Status) bool { return connected("furiosa", "")(st) && len(st.Polecats) == 2 })
	out, err := g.tryGit("", "ls-remote", "http://"+gitAddr+"/v1/git/norepo")
	if err == nil || !strings.Contains(out, "no repository for rig norepo") {
		t.Errorf("unknown rig: %v %s", err, out)
	}
}
