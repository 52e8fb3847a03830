package e2e

import (
	"bufio"
	"crypto/rand"
	"fmt"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
)

// Git benchmarks on a generated repository of realistic size (by default
// 20,000 commits, ~200 MB packed; SIDECAR_BENCH_GIT_COMMITS and
// SIDECAR_BENCH_GIT_BLOB change it), each in one run:
//   impl=httpbackend  git over plain loopback HTTP against git http-backend
//                     (hosted by net/http/cgi), the baseline
//   impl=ours         git through gt-agent, the tunnel (QUIC) and hostd
//   impl=ourstcp      the same with the agent on the TCP fallback
//   impl=file         git clone file://, the floor

// benchRepo returns a bare repository with the benchmark's history,
// generated once and kept under bin/ between runs.
func benchRepo(b *testing.B) string {
	commits := envInt("SIDECAR_BENCH_GIT_COMMITS", 20000)
	blob := envInt("SIDECAR_BENCH_GIT_BLOB", 10<<10)
	dir, _ := filepath.Abs(fmt.Sprintf("../bin/bench-repo-%dx%d.git", commits, blob))
	if _, err := os.Stat(filepath.Join(dir, "done")); err == nil {
		return dir
	}
	b.Logf("generating %d commits of %d random bytes in %s (once)", commits, blob, dir)
	_ = os.RemoveAll(dir)
	if out, err := exec.Command("git", "init", "-q", "--bare", "-b", "main", dir).CombinedOutput(); err != nil {
		b.Fatalf("%v %s", err, out)
	}
	cmd := exec.Command("git", "-C", dir, "fast-import", "--quiet")
	in, _ := cmd.StdinPipe()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriterSize(in, 1<<20)
	data := make([]byte, blob)
	for i := 1; i <= commits; i++ {
		_, _ = rand.Read(data)
		fmt.Fprintf(w, "blob\nmark :%d\ndata %d\n", i, len(data))
		w.Write(data)
		msg := fmt.Sprintf("commit %d", i)
		fmt.Fprintf(w, "\ncommit refs/heads/main\ncommitter bench <b@example.com> %d +0000\ndata %d\n%s\n", 1700000000+i, len(msg), msg)
		fmt.Fprintf(w, "M 100644 :%d data/%03d.bin\n\n", i, i%100)
	}
	w.Flush()
	in.Close()
	if err := cmd.Wait(); err != nil {
		b.Fatal(err)
	}
	if out, err := exec.Command("git", "-C", dir, "repack", "-adq").CombinedOutput(); err != nil {
		b.Fatalf("%v %s", err, out)
	}
	_ = os.WriteFile(filepath.Join(dir, "done"), nil, 0o644)
	return dir
}

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

// gitBench is one town serving the benchmark repository three ways.
type gitBench struct {
	g    *GitTown
	urls map[string]string
	pack int64
}

func newGitBench(b *testing.B) *gitBench {
	src := benchRepo(b)
	g := &GitTown{Town: NewTown(b), Home: b.TempDir()}
	g.Repo = filepath.Join(g.Dir, "gastown", ".repo.git")
	g.Git(b, "", "clone", "-q", "--bare", "--no-local", src, g.Repo)
	g.Git(b, g.Repo, "config", "http.receivepack", "true")
	g.Hostd, g.Addr = g.Serve("--git-upstream=false", "--log-level", "warn")
	gitPath, _ := exec.LookPath("git")
	backend := httptest.NewServer(&cgi.Handler{Path: gitPath, Args: []string{"http-backend"},
		Env: []string{"GIT_PROJECT_ROOT=" + g.Dir, "GIT_HTTP_EXPORT_ALL=1"}})
	b.Cleanup(backend.Close)
	var size int64
	packs, _ := filepath.Glob(filepath.Join(g.Repo, "objects", "pack", "*.pack"))
	for _, p := range packs {
		if st, err := os.Stat(p); err == nil {
			size += st.Size()
		}
	}
	return &gitBench{g: g, pack: size, urls: map[string]string{
		"httpbackend": backend.URL + "/gastown/.repo.git",
		"ours":        g.Polecat(b, "furiosa"),
		"ourstcp":     g.Polecat(b, "nux", "--transport", "tcp"),
		"file":        "file://" + g.Repo,
	}}
}

var gitImpls = []string{"httpbackend", "ours", "ourstcp", "file"}

// pushes numbers the benchmark's pushes, so that branch names stay unique
// across -count rounds.
var pushes atomic.Int64

// BenchmarkGit: clone and push through ours (the agent on QUIC, and on the
// TCP fallback) beside git http-backend over loopback HTTP and file://;
// for our clones, hostd's and the agent's own CPU per clone (the tunnel's
// work at each end; git's processes are not counted, for any impl).
func BenchmarkGit(b *testing.B) {
	gb := newGitBench(b)
	b.Logf("repository: %d MB packed", gb.pack>>20)
	for _, impl := range gitImpls {
		b.Run("op=clone/impl="+impl, func(b *testing.B) {
			b.SetBytes(gb.pack)
			agent := gb.g.Agents[map[string]string{"ours": "furiosa", "ourstcp": "nux"}[impl]]
			hostd0, agent0, clones := cpuTicks(b, gb.g.Hostd.Cmd.Process.Pid), 0, 0
			if agent != nil {
				agent0 = cpuTicks(b, agent.Cmd.Process.Pid)
			}
			for b.Loop() {
				dir := filepath.Join(b.TempDir(), "w")
				gb.g.Git(b, "", "clone", "-q", gb.urls[impl], dir)
				b.StopTimer()
				clones++
				_ = os.RemoveAll(dir)
				b.StartTimer()
			}
			if agent != nil { // the tunnel's CPU at each end (their own, not git's), per clone
				b.ReportMetric(float64(cpuTicks(b, gb.g.Hostd.Cmd.Process.Pid)-hostd0)*10/float64(clones), "hostd-cpu-ms")
				b.ReportMetric(float64(cpuTicks(b, agent.Cmd.Process.Pid)-agent0)*10/float64(clones), "agent-cpu-ms")
			}
		})
	}
	pushSize := envInt("SIDECAR_BENCH_GIT_PUSH", 50<<20) // bytes of new content per push
	b.Logf("pushes: %d MB each", pushSize>>20)
	for _, impl := range gitImpls {
		b.Run(fmt.Sprintf("op=push%dMB/impl=%s", pushSize>>20, impl), func(b *testing.B) {
			work := filepath.Join(b.TempDir(), "w")
			gb.g.Git(b, "", "clone", "-q", "--depth", "1", gb.urls["file"], work)
			b.SetBytes(int64(pushSize))
			for b.Loop() {
				b.StopTimer()
				n := pushes.Add(1)
				gb.g.Commit(b, work, fmt.Sprintf("push-%s-%d", impl, n), pushSize)
				b.StartTimer()
				// A post buffer larger than the push, for every impl: git
				// would otherwise send it chunked, which http-backend under
				// net/http/cgi (no CONTENT_LENGTH) refuses.
				gb.g.Git(b, work, "-c", "http.postBuffer=209715200", "push", "-q", gb.urls[impl], fmt.Sprintf("HEAD:refs/heads/polecat/%s-%s-%d", map[bool]string{true: "nux", false: "furiosa"}[impl == "ourstcp"], impl, n))
			}
		})
	}
}
