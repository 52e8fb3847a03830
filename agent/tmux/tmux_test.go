package tmux

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestReadPane(t *testing.T) {
	sock := []string{"-S", filepath.Join(t.TempDir(), "tmux.sock")}
	srv := Server{Args: sock}
	t.Cleanup(func() { _ = exec.Command("tmux", append(sock, "kill-server")...).Run() })
	if _, found, err := srv.ReadPane(context.Background(), "none"); err != nil || found {
		t.Fatalf("no server: found=%v err=%v", found, err)
	}
	run := func(args ...string) {
		if out, err := exec.Command("tmux", append(sock, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("tmux %v: %v %s", args, err, out)
		}
	}
	if err := srv.NewSession(context.Background(), "polecat", Spawn{Argv: []string{"sh", "-c", "echo started; read x; exit 7"}, Options: map[string]string{"@status": "/tmp/a b"}}); err != nil {
		t.Fatal(err)
	}
	p, found, err := srv.ReadPane(context.Background(), "polecat")
	if err != nil || !found || p.PID <= 0 || p.Dead || !strings.Contains(p.Command, "exit 7") {
		t.Fatalf("running pane: %+v found=%v err=%v", p, found, err)
	}
	if time.Since(p.Activity) > 5*time.Second {
		t.Errorf("activity %v ago", time.Since(p.Activity))
	}
	if _, found, _ := srv.ReadPane(context.Background(), "polecat2"); found {
		t.Error("a session name prefix matched another session")
	}
	run("send-keys", "-t", "=polecat:", "go", "Enter")
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if p, _, _ = srv.ReadPane(context.Background(), "polecat"); p.Dead && p.ExitCode != nil {
			break
		}
	}
	// tmux's exit status is best effort (under load it can show a pane dead
	// and never say why; gt-agent records the status itself): unknown is
	// acceptable, wrong is not.
	if !p.Dead || (p.ExitCode != nil && *p.ExitCode != 7) {
		t.Fatalf("after exit: %+v", p)
	}
	if v, err := srv.Option(context.Background(), "polecat", "@status"); err != nil || v != "/tmp/a b" {
		t.Errorf("session option: %q, %v", v, err)
	}
	if v, err := srv.Option(context.Background(), "polecat", "@unset"); err != nil || v != "" {
		t.Errorf("unset option: %q, %v", v, err)
	}

	// A dead pane is respawned in place, with new options.
	if err := srv.Respawn(context.Background(), "polecat", Spawn{Argv: []string{"sh", "-c", "read x"}, Options: map[string]string{"@status": "/tmp/c"}}); err != nil {
		t.Fatal(err)
	}
	p, found, err = srv.ReadPane(context.Background(), "polecat")
	if err != nil || !found || p.Dead || !strings.Contains(p.Command, "read x") {
		t.Fatalf("respawned pane: %+v found=%v err=%v", p, found, err)
	}
	if v, _ := srv.Option(context.Background(), "polecat", "@status"); v != "/tmp/c" {
		t.Errorf("option after respawn: %q", v)
	}
	if err := srv.NewSession(context.Background(), "polecat", Spawn{Argv: []string{"true"}}); err == nil || !strings.Contains(err.Error(), "duplicate") {
		t.Errorf("second session of one name: %v", err)
	}
}

// TestNoUTF8Locale: in a container with no locale set, tmux turns the
// tabs of a format into '_' unless it runs in a UTF-8 locale; the agent's
// reading of the pane must not depend on the image's locale.
func TestNoUTF8Locale(t *testing.T) {
	for _, k := range []string{"LC_ALL", "LC_CTYPE", "LANG"} {
		t.Setenv(k, "")
	}
	sock := []string{"-S", filepath.Join(t.TempDir(), "tmux.sock")}
	srv := Server{Args: sock}
	t.Cleanup(func() { _ = exec.Command("tmux", append(sock, "kill-server")...).Run() })
	if err := srv.NewSession(context.Background(), "polecat", Spawn{Argv: []string{"sh", "-c", "sleep 30"}}); err != nil {
		t.Fatal(err)
	}
	if p, found, err := srv.ReadPane(context.Background(), "polecat"); err != nil || !found || p.PID <= 0 {
		t.Fatalf("pane without a UTF-8 locale: %+v found=%v err=%v", p, found, err)
	}
	scr, err := srv.Capture(context.Background(), "polecat")
	if err != nil || len(scr.Lines) == 0 {
		t.Fatalf("capture without a UTF-8 locale: %+v %v", scr, err)
	}
}

func TestUTF8Env(t *testing.T) {
	for _, tc := range []struct {
		name    string
		env     []string
		changed bool
	}{
		{"none", []string{"PATH=/bin"}, true},
		{"LANG UTF-8", []string{"LANG=en_US.UTF-8"}, false},
		{"LANG C", []string{"LANG=C"}, true},
		{"LC_CTYPE utf8", []string{"LANG=C", "LC_CTYPE=C.utf8"}, false},
		{"LC_ALL C overrides a UTF-8 LANG", []string{"LANG=C.UTF-8", "LC_ALL=C"}, true},
		{"LC_ALL UTF-8", []string{"LC_ALL=C.UTF-8"}, false},
	} {
		got := utf8Env(tc.env)
		changed := !slices.Equal(got, tc.env)
		if changed != tc.changed {
			t.Errorf("%s: %q -> %q", tc.name, tc.env, got)
		}
		if changed && (slices.ContainsFunc(got, func(kv string) bool { return strings.HasPrefix(kv, "LC_ALL=") }) || !slices.Contains(got, "LC_CTYPE=C.UTF-8")) {
			t.Errorf("%s: %q is not UTF-8 for tmux", tc.name, got)
		}
	}
}

// TestSpawnEnvironment: a session's environment is the one its latest
// Spawn gave, for its command, for a process started in it later and for
// show-environment: not the environment of whoever started the server
// (a sandbox's first session), nor a variable the session before had and
// this one has not. Values and arguments reach the command as they are,
// a final ';' (tmux's command separator) included.
func TestSpawnEnvironment(t *testing.T) {
	dir := t.TempDir()
	sock := []string{"-S", filepath.Join(dir, "tmux.sock")}
	srv := Server{Args: sock}
	t.Cleanup(func() { _ = exec.Command("tmux", append(sock, "kill-server")...).Run() })
	ctx := context.Background()
	// The first session's client starts the server with its variables.
	t.Setenv("GT_BRANCH", "polecat/nux-first")
	t.Setenv("GT_RUN", "first")
	out := filepath.Join(dir, "out")
	// report writes the variables and its argument to out, then waits.
	report := []string{"sh", "-c", `printf '%s|%s|%s|%s' "$GT_BRANCH" "${GT_RUN-unset}" "$GT_ODD" "$1" > "$0.tmp" && mv "$0.tmp" "$0"; exec sleep 60`, out}
	read := func(what string) string {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if b, err := os.ReadFile(out); err == nil {
				_ = os.Remove(out)
				return string(b)
			}
		}
		t.Fatalf("%s wrote nothing", what)
		return ""
	}
	showEnv := func() string {
		t.Helper()
		b, err := exec.Command("tmux", append(sock, "show-environment", "-t", "=polecat:")...).Output()
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	odd := "-x;\nb\\;"
	if err := srv.NewSession(ctx, "polecat", Spawn{Argv: append(report, "first;"), Env: []string{"GT_BRANCH=polecat/nux-first", "GT_RUN=first", "GT_ODD=" + odd}}); err != nil {
		t.Fatal(err)
	}
	if got, want := read("the first session"), "polecat/nux-first|first|"+odd+"|first;"; got != want {
		t.Errorf("the first session's command saw %q, want %q", got, want)
	}
	if err := srv.Respawn(ctx, "polecat", Spawn{Argv: append(report, ";"), Env: []string{"GT_BRANCH=polecat/nux-second", "GT_ODD=;"}, Unset: []string{"GT_RUN"}}); err != nil {
		t.Fatal(err)
	}
	if got, want := read("the second session"), "polecat/nux-second|unset|;|;"; got != want {
		t.Errorf("the second session's command saw %q, want %q", got, want)
	}
	if env := showEnv(); !strings.Contains(env, "GT_BRANCH=polecat/nux-second\n") || !strings.Contains(env, "-GT_RUN\n") || strings.Contains(env, "first") {
		t.Errorf("show-environment after the second session:\n%s", env)
	}
	// A process started in the session later (a new window) sees the same.
	if b, err := exec.Command("tmux", append(sock, append([]string{"new-window", "-d", "-t", "=polecat:", "--"}, append(report, "window")...)...)...).CombinedOutput(); err != nil {
		t.Fatalf("new-window: %v %s", err, b)
	}
	if got, want := read("a new window"), "polecat/nux-second|unset|;|window"; got != want {
		t.Errorf("a new window in the session saw %q, want %q", got, want)
	}
	// A new session on the server (kept up, as a sandbox's is, after the
	// session before ended) has nothing of the first session's either.
	if err := srv.KeepRunning(ctx); err != nil {
		t.Fatal(err)
	}
	if err := srv.Kill(ctx, "polecat"); err != nil {
		t.Fatal(err)
	}
	if err := srv.NewSession(ctx, "polecat", Spawn{Argv: append(report, "third"), Env: []string{"GT_BRANCH=polecat/nux-third"}}); err != nil {
		t.Fatal(err)
	}
	if got, want := read("the third session"), "polecat/nux-third|unset||third"; got != want {
		t.Errorf("a new session after the first ended saw %q, want %q", got, want)
	}
}
