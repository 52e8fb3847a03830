package e2e

import (
	"bufio"
	"crypto/rand"
	"crypto/tls"
	"fmt"
	"net"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/polecat-sidecar/sidecar/hostd/pki"
)

// Git benchmarks on a generated repository of realistic size (by default
// 20,000 commits, ~200 MB packed; SIDECAR_BENCH_GIT_COMMITS and
// SIDECAR_BENCH_GIT_BLOB change it), each in one run:
//   impl=httpbackend  git over plain loopback HTTP against git http-backend
//                     (hosted by net/http/cgi), the baseline
//   impl=ours         git through gt-agent, the tunnel (QUIC) and hostd
//   impl=ourstcp      the same with the agent on the TCP fallback
//   impl=file         git clone file://, the floor
// BenchmarkWANGit runs them across an emulated link, on a smaller
// repository, with the baseline behind TLS (impl=https).

// benchRepo returns a bare repository of commits commits of blob random
// bytes each, generated once and kept under bin/ between runs.
func benchRepo(b *testing.B, commits, blob int) string {
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

// gitBench is one town serving the benchmark repository to the agents on
// its ends, and the baselines.
type gitBench struct {
	g    *GitTown
	urls map[string]string
	pack int64
}

// newGitBench serves a copy of src through hostd, to an agent on QUIC
// (furiosa) and one on the TCP fallback (nux), and through git
// http-backend: on loopback over plain HTTP (impl=httpbackend), and from
// file:// (impl=file); across a link over HTTPS (impl=https), as an
// operator would serve git over a network.
func newGitBench(b *testing.B, e ends, src string) *gitBench {
	g := &GitTown{Town: NewTown(b), Home: b.TempDir()}
	g.Netns = e.netns()
	g.Repo = filepath.Join(g.Dir, "gastown", ".repo.git")
	g.Git(b, "", "clone", "-q", "--bare", "--no-local", src, g.Repo)
	g.Git(b, g.Repo, "config", "http.receivepack", "true")
	g.Addr = e.hostAddr(b)
	g.Hostd = g.ServeOn(g.Addr, "--git-upstream=false", "--log-level", "warn")
	gitPath, _ := exec.LookPath("git")
	backend := httptest.NewUnstartedServer(&cgi.Handler{Path: gitPath, Args: []string{"http-backend"},
		Env: []string{"GIT_PROJECT_ROOT=" + g.Dir, "GIT_HTTP_EXPORT_ALL=1"}})
	backend.Listener.Close()
	backend.Listener = e.listen(b)
	gb := &gitBench{g: g, urls: map[string]string{
		"ours":    g.Polecat(b, "furiosa"),
		"ourstcp": g.Polecat(b, "nux", "--transport", "tcp"),
	}}
	if e.link == nil {
		backend.Start()
		gb.urls["httpbackend"], gb.urls["file"] = backend.URL+"/gastown/.repo.git", "file://"+g.Repo
	} else {
		backend.TLS = g.serverTLS(b, e.hostIP())
		backend.StartTLS()
		gb.urls["https"] = backend.URL + "/gastown/.repo.git"
	}
	b.Cleanup(backend.Close)
	packs, _ := filepath.Glob(filepath.Join(g.Repo, "objects", "pack", "*.pack"))
	for _, p := range packs {
		if st, err := os.Stat(p); err == nil {
			gb.pack += st.Size()
		}
	}
	return gb
}

// serverTLS is a server certificate from the town's CA for ip, which the
// town's git is told to trust.
func (g *GitTown) serverTLS(b *testing.B, ip string) *tls.Config {
	ca, err := pki.Open(pki.Dir(g.Dir), "")
	if err != nil {
		b.Fatal(err)
	}
	cert, err := ca.ServerCert(nil, []net.IP{net.ParseIP(ip)}, time.Hour)
	if err != nil {
		b.Fatal(err)
	}
	caFile := filepath.Join(g.Home, "ca.crt")
	if err := os.WriteFile(caFile, ca.CertPEM(), 0o644); err != nil {
		b.Fatal(err)
	}
	g.Env = append(g.Env, "GIT_SSL_CAINFO="+caFile)
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS13}
}

// pushes numbers the benchmark's pushes, so that branch names stay unique
// across -count rounds.
var pushes atomic.Int64

// BenchmarkGit: clone and push through ours (the agent on QUIC, and on the
// TCP fallback) beside git http-backend over loopback HTTP and file://;
// for our clones, hostd's and the agent's own CPU per clone (the tunnel's
// work at each end; git's processes are not counted, for any impl).
func BenchmarkGit(b *testing.B) {
	src := benchRepo(b, envInt("SIDECAR_BENCH_GIT_COMMITS", 20000), envInt("SIDECAR_BENCH_GIT_BLOB", 10<<10))
	gitRows(b, newGitBench(b, ends{}, src), []string{"httpbackend", "ours", "ourstcp", "file"}, envInt("SIDECAR_BENCH_GIT_PUSH", 50<<20))
}

// BenchmarkWANGit: BenchmarkGit's clone and push across an emulated link
// (20 Mbit/s, 50 ms round trip, each loss rate) from hostd and from git
// http-backend behind TLS, on a repository of 1,000 commits (~10 MB
// packed; SIDECAR_BENCH_WAN_GIT_COMMITS) and 5 MB pushes, so that a clone
// takes seconds at the link's rate, not minutes.
func BenchmarkWANGit(b *testing.B) {
	src := benchRepo(b, envInt("SIDECAR_BENCH_WAN_GIT_COMMITS", 1000), 10<<10)
	eachLoss(b, wanRate, func(b *testing.B, e ends) {
		gitRows(b, newGitBench(b, e, src), []string{"https", "ours", "ourstcp"}, envInt("SIDECAR_BENCH_WAN_GIT_PUSH", 5<<20))
	})
}

// gitRows clones and pushes pushSize bytes of new content through each
// of impls.
func gitRows(b *testing.B, gb *gitBench, impls []string, pushSize int) {
	b.Logf("repository: %d MB packed", gb.pack>>20)
	for _, impl := range impls {
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
	b.Logf("pushes: %d MB each", pushSize>>20)
	for _, impl := range impls {
		b.Run(fmt.Sprintf("op=push%dMB/impl=%s", pushSize>>20, impl), func(b *testing.B) {
			work := filepath.Join(b.TempDir(), "w")
			gb.g.Git(b, "", "clone", "-q", "--depth", "1", "file://"+gb.g.Repo, work)
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
