package run

import (
	"context"
	"os/exec"
	"slices"
	"testing"
)

// TestSessionEnv: a session gets the variables Gas Town sets (GT_*, BD_*,
// BEADS_*, CLAUDE*, ANTHROPIC_*) and those asked for, with their values,
// never the container's own settings (GT_PROXY_*, GT_AGENT_*) nor the
// host's others.
func TestSessionEnv(t *testing.T) {
	environ := []string{"GT_RIG=gastown", "GT_POLECAT=toast", "GT_AGENT=claude", "GT_PROXY_URL=https://x", "GT_AGENT_JOIN=tok",
		"BD_ACTOR=x", "BEADS_DIR=/b", "CLAUDECODE=", "CLAUDE_CONFIG_DIR=/c", "ANTHROPIC_API_KEY=k=v", "HOME=/home/op", "PATH=/bin", "MY_TOKEN=t"}
	got := sessionEnv(environ, []string{"MY_TOKEN", "NOT_SET"})
	want := []string{"GT_RIG=gastown", "GT_POLECAT=toast", "GT_AGENT=claude", "BD_ACTOR=x", "BEADS_DIR=/b", "CLAUDECODE=", "CLAUDE_CONFIG_DIR=/c", "ANTHROPIC_API_KEY=k=v", "MY_TOKEN=t"}
	if !slices.Equal(got, want) {
		t.Errorf("sessionEnv = %q, want %q", got, want)
	}
}

// TestGitIdentity: the sandbox's clone commits as a host polecat does:
// as the author Gas Town names (GIT_AUTHOR_NAME, the polecat), else the
// host's user.name, with the host's user.email as git reads them in the
// polecat's worktree.
func TestGitIdentity(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("HOME", t.TempDir())
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	for _, args := range [][]string{{"init", "-q", dir}, {"-C", dir, "config", "user.name", "Operator"}, {"-C", dir, "config", "user.email", "op@example.com"}} {
		if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	env := map[string]string{"GIT_AUTHOR_NAME": "toast"}
	if name, email := gitIdentity(context.Background(), dir, func(k string) string { return env[k] }); name != "toast" || email != "op@example.com" {
		t.Errorf("with GIT_AUTHOR_NAME: %q <%s>, want toast <op@example.com>", name, email)
	}
	if name, email := gitIdentity(context.Background(), dir, func(string) string { return "" }); name != "Operator" || email != "op@example.com" {
		t.Errorf("without: %q <%s>, want Operator <op@example.com>", name, email)
	}
	if name, email := gitIdentity(context.Background(), t.TempDir(), func(string) string { return "" }); name != "" || email != "" {
		t.Errorf("with no git identity configured: %q <%s>, want none", name, email)
	}
}
