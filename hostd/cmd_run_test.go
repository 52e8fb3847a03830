package main

import (
	"context"
	"crypto/rand"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/polecat-sidecar/sidecar/hostd/api"
	"github.com/polecat-sidecar/sidecar/hostd/pki"
	"github.com/polecat-sidecar/sidecar/hostd/sandbox"
	"github.com/polecat-sidecar/sidecar/hostd/state"
	"github.com/polecat-sidecar/sidecar/internal/unixsock/unixsocktest"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// TestSessionEnv: a session gets the variables Gas Town sets (GT_*, BD_*,
// BEADS_*, CLAUDE*, ANTHROPIC_*) and those asked for, never the
// container's own settings (GT_PROXY_*, GT_AGENT_*) nor the host's others.
func TestSessionEnv(t *testing.T) {
	environ := []string{"GT_RIG=gastown", "GT_POLECAT=toast", "GT_AGENT=claude", "GT_PROXY_URL=https://x", "GT_AGENT_JOIN=tok",
		"BD_ACTOR=x", "BEADS_DIR=/b", "CLAUDECODE=", "CLAUDE_CONFIG_DIR=/c", "ANTHROPIC_API_KEY=k", "HOME=/home/op", "PATH=/bin", "MY_TOKEN=t"}
	got := sessionEnv(environ, []string{"MY_TOKEN"})
	want := []string{"MY_TOKEN", "GT_RIG", "GT_POLECAT", "GT_AGENT", "BD_ACTOR", "BEADS_DIR", "CLAUDECODE", "CLAUDE_CONFIG_DIR", "ANTHROPIC_API_KEY"}
	if !slices.Equal(got, want) {
		t.Errorf("sessionEnv = %q, want %q", got, want)
	}
}

// TestKeepLiveness: while the session runs, hostd run puts hostd back in
// its tmux session's GT_PROCESS_NAMES when Gas Town sets the variable
// after it (as SessionManager.Start does once the session exists), so
// Gas Town's zombie check keeps seeing the pane's hostd as the agent.
func TestKeepLiveness(t *testing.T) {
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("no tmux")
	}
	sock := filepath.Join(t.TempDir(), "tmux.sock")
	tmux := func(args ...string) string {
		t.Helper()
		out, err := exec.Command("tmux", append([]string{"-S", sock}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("tmux %v: %v: %s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	tmux("-f", "/dev/null", "new-session", "-d", "-s", "gt-toast", "sleep 60")
	t.Cleanup(func() { _ = exec.Command("tmux", "-S", sock, "kill-server").Run() })
	pane := tmux("display-message", "-p", "-t", "gt-toast", "#{pane_id}")
	t.Setenv("TMUX", sock+",1,0")
	t.Setenv("TMUX_PANE", pane)

	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() { keepLiveness(context.Background(), done, 20*time.Millisecond); close(stopped) }()
	tmux("set-environment", "-t", "gt-toast", "GT_PROCESS_NAMES", "node,claude") // Gas Town, after hostd run started
	want := "GT_PROCESS_NAMES=node,claude,hostd"
	for end := time.Now().Add(5 * time.Second); tmux("show-environment", "-t", "gt-toast", "GT_PROCESS_NAMES") != want; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("GT_PROCESS_NAMES still %q, want %q", tmux("show-environment", "-t", "gt-toast", "GT_PROCESS_NAMES"), want)
		}
	}
	close(done)
	<-stopped
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

// TestRunFailsFast: a hostd run that cannot start its polecat (hostd
// serve down, no runtime CLI, an engine that does not answer, an image
// the engine does not have) fails within seconds with one line saying
// what to do, before it makes anything, and hostd status then shows that
// polecat's failure, in the table, in JSON and in its detail: reported to
// hostd serve, or, with serve down, recorded for serve to show once it
// runs. With serve down the runtime is a stand-in that logs its argv: it
// must never be run. The cases marked docker use the machine's Docker
// CLI (and for the missing image, its engine), and are skipped without.
func TestRunFailsFast(t *testing.T) {
	image := "polecat-sidecar-test/missing:" + strings.ToLower(rand.Text()[:8])
	tests := []struct {
		name   string
		serve  bool
		docker bool
		args   []string
		env    map[string]string
		want   string
	}{
		{"hostd serve down", false, false, nil, nil, "hostd is not running (no daemon answers on "},
		{"no runtime CLI", true, false, []string{"--runtime", "/nonexistent/docker"}, nil, "container runtime not found: /nonexistent/docker (install it, or give --runtime)"},
		{"engine not answering", true, true, nil, map[string]string{"DOCKER_HOST": "unix:///nonexistent/docker.sock"},
			"the container runtime does not answer (start its engine, or name the one to use in sandbox.runtime): docker container: exit status 1: Cannot connect to the Docker daemon"},
		{"image missing", true, true, nil, nil, "image " + image + " is not among docker's images: build it ('make image'), pull or load it ('docker pull " + image + "')"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := exec.LookPath("docker"); tt.docker && err != nil {
				t.Skip("no docker CLI")
			}
			if tt.docker && tt.env == nil && exec.Command("docker", "info").Run() != nil {
				t.Skip("no Docker engine")
			}
			town := unixsocktest.Dir(t)
			if _, _, err := pki.Init(pki.Dir(town), ""); err != nil {
				t.Fatal(err)
			}
			id := wire.Identity{Rig: "failfast", Name: strings.ToLower(rand.Text()[:10])}
			if err := os.MkdirAll(filepath.Join(town, id.Rig, "polecats", id.Name), 0o755); err != nil {
				t.Fatal(err)
			}
			args := []string{"run", "--image", image}
			calls := filepath.Join(t.TempDir(), "calls")
			if !tt.serve {
				standIn := filepath.Join(t.TempDir(), "docker")
				if err := os.WriteFile(standIn, []byte("#!/bin/sh\necho \"$*\" >> "+calls+"\n"), 0o755); err != nil {
					t.Fatal(err)
				}
				args = append(args, "--runtime", standIn)
			} else {
				serveTown(t, town)
			}
			t.Setenv("GT_RIG", id.Rig)
			t.Setenv("GT_POLECAT", id.Name)
			for k, v := range tt.env {
				t.Setenv(k, v)
			}

			start := time.Now()
			out, code := runHostd(t, town, "", append(append(args, tt.args...), "--", "claude")...)
			took := time.Since(start)
			line := "hostd: " + id.String() + " not started: " + tt.want
			if code != 1 || !strings.HasPrefix(out, line) || strings.Count(out, "\n") != 1 {
				t.Fatalf("hostd run: exit %d, %q; want 1 and one line %q...", code, out, line)
			}
			if took > 5*time.Second {
				t.Errorf("hostd run took %v to fail", took)
			}
			if b, err := os.ReadFile(calls); err == nil {
				t.Errorf("with hostd serve down, hostd run ran the runtime:\n%s", b)
			}
			if tt.docker && tt.env == nil { // the engine answers: nothing was made there
				if out, err := exec.Command("docker", "container", "inspect", sandbox.Name(id)).CombinedOutput(); err == nil || !strings.Contains(string(out), "No such container") {
					t.Errorf("a container %s is there after the failed start: %v %s", sandbox.Name(id), err, out)
				}
			}

			if !tt.serve {
				serveTown(t, town) // it shows what hostd run recorded while it was down
			}
			checkRuns(t, town, []run{
				{[]string{"status"}, 0, "\n1 polecat hostd run could not start (each shown until its next start):\n  " + id.String() + ", "},
				{[]string{"status"}, 0, " ago: " + tt.want},
				{[]string{"status", id.String()}, 0, id.String() + ": dead for "},
				{[]string{"status", id.String()}, 0, "  start:     failed "},
				{[]string{"status", "--json"}, 0, `"reason": "` + tt.want},
			})
			st, err := api.NewSocketClient(state.For(town).Socket()).Status(context.Background())
			if err != nil || len(st.StartFailures) != 1 || st.StartFailures[0].Identity != api.Identity(id) {
				t.Errorf("status: %+v, %v; want %s's failure", st.StartFailures, err, id)
			}
		})
	}
}

// TestRunRemovesWhatItMade: when the first clone fails after hostd run
// made the sandbox, the sandbox goes again, so that a failed start leaves
// no container; a sandbox that was there before (the polecat's work) is
// never removed. The runtime is a stand-in that logs its argv and fails
// every exec, the clone's among them; the containers' runtime behind it
// is images/e2e's (TestSandboxFailures).
func TestRunRemovesWhatItMade(t *testing.T) {
	tests := []struct {
		name    string
		exists  bool
		removed bool
	}{
		{"made by this start", false, true},
		{"there before", true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			town, _ := startHostd(t)
			id := wire.Identity{Rig: "gastown", Name: "toast"}
			dir := t.TempDir()
			calls, bin := filepath.Join(dir, "calls"), filepath.Join(dir, "docker")
			inspect := `echo "Error response from daemon: No such container: $4" >&2; exit 1`
			if tt.exists {
				inspect = `printf 'true\t%s\t%s\n' "` + town + `" gastown/toast`
			}
			script := "#!/bin/sh\necho \"$*\" >> " + calls + "\ncase \"$1 $2\" in\n" +
				"'container inspect') " + inspect + ";;\n" +
				"exec*) echo 'fatal: unable to access http://127.0.0.1:9878/v1/git/gastown/' >&2; exit 128;;\n" +
				"esac\nexit 0\n"
			if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
				t.Fatal(err)
			}
			t.Setenv("GT_RIG", id.Rig)
			t.Setenv("GT_POLECAT", id.Name)
			out, code := runHostd(t, town, "", "run", "--runtime", bin, "--image", "polecat:1", "--", "claude")
			if code != 1 || !strings.Contains(out, "hostd: gastown/toast not started: cloning gastown into the sandbox") {
				t.Fatalf("hostd run: exit %d, %q; want the clone's failure", code, out)
			}
			b, _ := os.ReadFile(calls)
			if removed := strings.Contains(string(b), "\nrm -f -v gt-gastown-toast\n"); removed != tt.removed {
				t.Errorf("sandbox removed: %v, want %v; the runtime ran:\n%s", removed, tt.removed, b)
			}
		})
	}
}
