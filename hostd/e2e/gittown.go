package e2e

import (
	"crypto/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/polecat-sidecar/sidecar/tunnel/tunneltest"
)

// GitTown is a town whose rig "gastown" has a .repo.git cloned from a local
// "origin" bare repository, with hostd serving it.
type GitTown struct {
	*Town
	Hostd  *Proc
	Addr   string
	Origin string
	Repo   string
	Home   string
	// Agents are the gt-agent processes Polecat started, by name.
	Agents map[string]*Proc
	// Env is more of git's environment, after GitEnv's.
	Env []string
}

// GitEnv isolates git from the machine's configuration.
func GitEnv(home string) []string {
	return append(os.Environ(), "HOME="+home, "GIT_CONFIG_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
}

// Git runs git in dir and returns its combined output, failing the test on
// error.
func (g *GitTown) Git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	out, err := g.TryGit(dir, args...)
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// TryGit runs git in dir, beside the agents (Town.Netns), and returns its
// combined output and error.
func (g *GitTown) TryGit(dir string, args ...string) (string, error) {
	cmd := Command(g.Netns.Agent, "git", args...)
	cmd.Dir = dir
	cmd.Env = append(GitEnv(g.Home), g.Env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// NewGitTown makes a GitTown and starts hostd on loopback with the extra
// serve flags.
func NewGitTown(t testing.TB, serve ...string) *GitTown {
	g := SeedGitTown(t)
	g.Hostd, g.Addr = g.Serve(serve...)
	return g
}

// SeedGitTown makes the town, origin and .repo.git of a GitTown without
// starting hostd, for a caller that starts it elsewhere.
func SeedGitTown(t testing.TB) *GitTown {
	g := &GitTown{Town: NewTown(t), Home: t.TempDir()}
	g.Origin = filepath.Join(t.TempDir(), "origin.git")
	seed := t.TempDir()
	g.Git(t, seed, "init", "-q", "-b", "main")
	_ = os.WriteFile(filepath.Join(seed, "README"), []byte("hello\n"), 0o644)
	g.Git(t, seed, "add", ".")
	g.Git(t, seed, "commit", "-q", "-m", "first")
	g.Git(t, seed, "clone", "-q", "--bare", seed, g.Origin)
	g.Repo = filepath.Join(g.Dir, "gastown", ".repo.git")
	g.Git(t, seed, "clone", "-q", "--bare", g.Origin, g.Repo)
	return g
}

// Polecat starts an agent for gastown/<name> (with extra flags) and returns
// its git origin URL.
func (g *GitTown) Polecat(t testing.TB, name string, flags ...string) string {
	gitAddr := tunneltest.FreeAddr(t)
	p := StartIn(t, g.Netns.Agent, AgentEnv(g.Addr, g.Issue("gastown/"+name, time.Hour)), "gt-agent", append([]string{"up", "--git-listen", gitAddr}, flags...)...)
	if g.Agents == nil {
		g.Agents = map[string]*Proc{}
	}
	g.Agents[name] = p
	g.WaitStatus(10*time.Second, Connected(name, ""))
	return "http://" + gitAddr + "/v1/git/gastown"
}

// Refs is the repository's refs, one "sha name" per line.
func (g *GitTown) Refs(t testing.TB, repo string) string {
	return g.Git(t, repo, "for-each-ref", "--format=%(objectname) %(refname) %(symref)")
}

// Commit makes a commit in dir with content of the given size and returns
// its id.
func (g *GitTown) Commit(t testing.TB, dir, msg string, size int) string {
	data := make([]byte, size)
	_, _ = rand.Read(data)
	_ = os.WriteFile(filepath.Join(dir, msg+".bin"), data, 0o644)
	g.Git(t, dir, "add", ".")
	g.Git(t, dir, "commit", "-q", "-m", msg)
	return strings.TrimSpace(g.Git(t, dir, "rev-parse", "HEAD"))
}
