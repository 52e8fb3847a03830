package e2e

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/polecat-sidecar/sidecar/hostd/api"
)

func TestGitUpstreamQueue(t *testing.T) {
	g := NewGitTown(t, "--git-upstream-retry", "200ms")
	url := g.Polecat(t, "furiosa")
	work := filepath.Join(t.TempDir(), "w")
	g.Git(t, "", "clone", "-q", url, work)
	c1 := g.Commit(t, work, "one", 10)
	g.Git(t, work, "push", "-q", "origin", "HEAD:polecat/furiosa-up")
	waitRef(t, g, g.Origin, "refs/heads/polecat/furiosa-up", c1)

	// Origin goes away: the push lands here and waits, with its error shown.
	_ = os.Rename(g.Origin, g.Origin+".away")
	c2 := g.Commit(t, work, "two", 10)
	g.Git(t, work, "push", "-q", "origin", "HEAD:polecat/furiosa-up")
	st := g.WaitStatus(10*time.Second, func(st api.Status) bool {
		return len(st.Upstream) == 1 && st.Upstream[0].Attempts >= 2 && st.Upstream[0].LastError != ""
	})
	if st.Upstream[0].Branch != "polecat/furiosa-up" || !strings.Contains(st.Upstream[0].LastError, "fatal:") {
		t.Errorf("queued %+v", st.Upstream[0])
	}
	if table := g.Run("status"); !strings.Contains(table, "waiting to be pushed upstream") || !strings.Contains(table, "polecat/furiosa-up") {
		t.Errorf("status does not show the queue:\n%s", table)
	}

	// The queue survives a restart of hostd.
	_ = g.Hostd.Cmd.Process.Signal(syscall.SIGTERM)
	_ = g.Hostd.Exited(t, 5*time.Second)
	g.Hostd = Start(t, nil, "hostd", "--town", g.Dir, "serve", "--listen", g.Addr, "--git-upstream-retry", "200ms")
	g.WaitStatus(5*time.Second, func(st api.Status) bool { return len(st.Upstream) == 1 })
	g.WaitStatus(10*time.Second, Connected("furiosa", ""))

	// Origin is back: delivered, and the queue empties.
	_ = os.Rename(g.Origin+".away", g.Origin)
	waitRef(t, g, g.Origin, "refs/heads/polecat/furiosa-up", c2)
	g.WaitStatus(10*time.Second, func(st api.Status) bool { return len(st.Upstream) == 0 })

	// Deleting the branch here deletes it upstream too.
	g.Git(t, work, "push", "-q", "origin", ":polecat/furiosa-up")
	waitRef(t, g, g.Origin, "refs/heads/polecat/furiosa-up", "")
}

// waitRef waits until ref in repo is at want ("" for absent).
func waitRef(t *testing.T, g *GitTown, repo, ref, want string) {
	t.Helper()
	var got string
	for range 200 {
		out, err := g.TryGit(repo, "rev-parse", "--verify", "--quiet", ref)
		got = strings.TrimSpace(out)
		if (want == "" && err != nil) || (want != "" && got == want) {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s in %s is %q, want %q", ref, repo, got, want)
}

func TestGitKillHostdMidPush(t *testing.T) {
	g := NewGitTown(t, "--git-upstream=false")
	url := g.Polecat(t, "furiosa")
	work := filepath.Join(t.TempDir(), "w")
	g.Git(t, "", "clone", "-q", url, work)
	g.Commit(t, work, "big", 60<<20)
	push := exec.Command("git", "push", "origin", "HEAD:polecat/furiosa-big")
	push.Dir, push.Env = work, GitEnv(g.Home)
	var out bytes.Buffer
	push.Stdout, push.Stderr = &out, &out
	push.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := push.Start(); err != nil {
		t.Fatal(err)
	}
	// Kill hostd once the pack is on its way.
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) && !incoming(g.Repo) {
		time.Sleep(5 * time.Millisecond)
	}
	_ = g.Hostd.Cmd.Process.Kill()
	// The client is not under test (over QUIC it learns of the loss only at
	// the idle timeout): end it and its git-remote-http.
	_ = syscall.Kill(-push.Process.Pid, syscall.SIGKILL)
	_ = push.Wait()
	eventually(t, 15*time.Second, "receive-pack, hostd's child, gone once hostd died", func() bool { return !gitIn(g.Repo) })
	if o, err := g.TryGit(g.Repo, "fsck", "--strict"); err != nil {
		t.Fatalf("fsck after hostd died mid-push: %v\n%s", err, o)
	}
	var locks []string
	_ = filepath.WalkDir(g.Repo, func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(p, ".lock") {
			locks = append(locks, p)
		}
		return nil
	})
	if len(locks) > 0 {
		t.Errorf("stale locks: %v", locks)
	}
	if strings.Contains(g.Refs(t, g.Repo), "furiosa-big") {
		t.Log("the push completed before hostd died; the kill came too late to test much")
	}
}

// gitIn says whether a git process works on repo: names it on its command
// line (receive-pack) or runs in it (index-pack).
func gitIn(repo string) bool {
	cmdlines, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, f := range cmdlines {
		b, err := os.ReadFile(f)
		if err != nil || !bytes.Contains(b, []byte("git")) {
			continue
		}
		cwd, _ := os.Readlink(filepath.Join(filepath.Dir(f), "cwd"))
		if bytes.Contains(b, []byte(repo)) || cwd == repo || strings.HasPrefix(cwd, repo+"/") {
			return true
		}
	}
	return false
}

// incoming reports whether receive-pack has a quarantine directory, that
// is, a pack is being received.
func incoming(repo string) bool {
	m, _ := filepath.Glob(filepath.Join(repo, "objects", "*incoming-*"))
	return len(m) > 0
}
