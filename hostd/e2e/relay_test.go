package e2e

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/polecat-sidecar/sidecar/hostd/api"
	"github.com/polecat-sidecar/sidecar/hostd/state"
	"github.com/polecat-sidecar/sidecar/tunnel/tunneltest"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// relayRig is hostd with the stand-in gt/bd, and one connected agent.
type relayRig struct {
	tw     *Town
	name   string // the polecat's
	hostd  *Proc
	agent  *Proc
	socket string
	certs  string
	relay  *tunneltest.Relay
	addr   string // hostd's
	ends   ends
}

type rigOpts struct {
	serve    []string // extra hostd serve flags
	agent    []string // extra gt-agent up flags
	viaRelay bool     // put a tunneltest relay between agent and hostd
	ends     ends     // hostd and the agent at the two ends of a link (the WAN rows)
}

func newRelayRig(t testing.TB, o rigOpts) *relayRig { return newRelayRigAs(t, "gastown/furiosa", o) }

// newRelayRigAs is newRelayRig with the agent's polecat id.
func newRelayRigAs(t testing.TB, id string, o rigOpts) *relayRig {
	fake, err := filepath.Abs("testdata/fake-gt.sh")
	if err != nil {
		t.Fatal(err)
	}
	tw := NewTown(t)
	tw.Netns = o.ends.netns()
	addr := o.ends.hostAddr(t)
	hostd := tw.ServeOn(addr, append([]string{"--relay-gt", fake, "--relay-bd", fake}, o.serve...)...)
	r := &relayRig{tw: tw, name: strings.SplitN(id, "/", 2)[1], hostd: hostd, socket: filepath.Join(t.TempDir(), "agent.sock"), addr: addr, ends: o.ends}
	if o.viaRelay {
		r.relay = tunneltest.NewRelay(t, addr)
		addr = r.relay.Addr
	}
	r.certs = tw.Issue(id, time.Hour)
	r.agent = StartIn(t, tw.Netns.Agent, AgentEnv(addr, r.certs), "gt-agent", append([]string{"up", "--socket", r.socket}, o.agent...)...)
	tw.WaitStatus(10*time.Second, Connected(strings.SplitN(id, "/", 2)[1], ""))
	return r
}

// scratch is a new directory inside the polecat's own directory in the
// town (<town>/gastown/polecats/<name>), the one place outside its
// worktree a relayed command may write: where the stand-in's files go.
func (r *relayRig) scratch(t testing.TB) string { return scratch(t, r.tw, r.name) }

// scratch is a new directory inside polecat gastown/name's own directory.
func scratch(t testing.TB, tw *Town, name string) string {
	t.Helper()
	own := filepath.Join(tw.Dir, "gastown", "polecats", name)
	if err := os.MkdirAll(own, 0o755); err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp(own, "scratch-")
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// result is how a shim run ended.
type result struct {
	stdout, stderr []byte
	code           int
}

// command prepares the gt (or bd) shim with args: bin/gt, or gt as the
// client in $SIDECAR_RELAY_CLIENT when it is set.
func (r *relayRig) command(name string, args ...string) *exec.Cmd {
	path := filepath.Join(BinDir, name)
	if c := os.Getenv(RelayClientEnv); c != "" && name == "gt" {
		path = c
	}
	cmd := exec.Command(path, args...)
	cmd.Env = append(os.Environ(), "GT_AGENT_SOCKET="+r.socket)
	return cmd
}

// run runs the shim to completion.
func (r *relayRig) run(t testing.TB, stdin io.Reader, name string, args ...string) result {
	t.Helper()
	cmd := r.command(name, args...)
	var out, errb bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	return result{out.Bytes(), errb.Bytes(), cmd.ProcessState.ExitCode()}
}

func TestRelayArgvEnvAndExit(t *testing.T) {
	r := newRelayRig(t, rigOpts{})
	args := []string{"plain", "with space", `"double" 'single'`, "line\nbreak", "tab\there", "\xff\xfe non-UTF-8 \xc3", "", "-x", "--", "$HOME;`id`"}
	res := r.run(t, nil, "gt", append([]string{"nudge", "args", "--"}, args...)...) // after --, hostd's grammar reads them as text
	if res.code != 0 {
		t.Fatalf("exit %d, stderr %s", res.code, res.stderr)
	}
	got := strings.Split(strings.TrimSuffix(string(res.stdout), "\x00"), "\x00")
	if len(got) != len(args) {
		t.Fatalf("host saw %d arguments, sent %d: %q", len(got), len(args), got)
	}
	for i := range args {
		if got[i] != args[i] {
			t.Errorf("argument %d: host saw %q, sent %q", i, got[i], args[i])
		}
	}

	cmd := r.command("bd", "show", "env")
	cmd.Env = append(cmd.Env, "TERM=xterm-test", "COLUMNS=123", "GT_ROLE=evil/polecats/x", "BD_ACTOR=evil", "HOME=/evil", "SECRET_TOKEN=s3cret")
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	env := string(out)
	for _, want := range []string{"GT_ROLE=gastown/polecats/furiosa", "GT_RIG=gastown", "GT_POLECAT=furiosa", "BD_ACTOR=gastown/polecats/furiosa",
		"BEADS_AGENT_NAME=gastown/furiosa", "GT_PROXY_IDENTITY=gastown/furiosa", "TERM=xterm-test", "COLUMNS=123"} {
		if !strings.Contains(env, want+"\n") {
			t.Errorf("host environment lacks %s:\n%s", want, env)
		}
	}
	for _, bad := range []string{"evil", "s3cret", "HOSTD_", "GT_AGENT_SOCKET"} {
		if strings.Contains(env, bad) {
			t.Errorf("host environment contains %q:\n%s", bad, env)
		}
	}
	// It runs in the polecat's worktree, else its rig's directory, else
	// the town.
	rig := filepath.Join(r.tw.Dir, "gastown")
	for _, dir := range []string{r.tw.Dir, rig, filepath.Join(rig, "polecats", "furiosa", "gastown")} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if res := r.run(t, nil, "gt", "nudge", "pwd"); strings.TrimSpace(string(res.stdout)) != dir {
			t.Errorf("command ran in %q, want %q", res.stdout, dir)
		}
	}

	for _, c := range []struct {
		args []string
		code int
	}{{[]string{"exit", "0"}, 0}, {[]string{"exit", "1"}, 1}, {[]string{"exit", "42"}, 42}, {[]string{"killself"}, 128 + 9}} {
		if res := r.run(t, nil, "gt", append([]string{"nudge"}, c.args...)...); res.code != c.code {
			t.Errorf("%v: exit %d, want %d (stderr %s)", c.args, res.code, c.code, res.stderr)
		}
	}
}

// TestRelayThroughGtAgent: gt-agent relays as the shim does, both when an
// image links gt or bd to it and as gt-agent exec.
func TestRelayThroughGtAgent(t *testing.T) {
	r := newRelayRig(t, rigOpts{})
	dir := t.TempDir()
	if err := os.Symlink(filepath.Join(BinDir, "gt-agent"), filepath.Join(dir, "bd")); err != nil {
		t.Fatal(err)
	}
	for name, argv := range map[string][]string{
		"linked as bd":  {filepath.Join(dir, "bd"), "show", "args", "--", "-x", "a b"},
		"gt-agent exec": {filepath.Join(BinDir, "gt-agent"), "exec", "--", "bd", "show", "args", "--", "-x", "a b"},
	} {
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Env = append(os.Environ(), "GT_AGENT_SOCKET="+r.socket)
		out, err := cmd.Output()
		if err != nil || string(out) != "-x\x00a b\x00" {
			t.Errorf("%s: %q %v", name, out, err)
		}
	}
}

// TestRelayEnvIsAPolecatSession: the host command's whole environment is
// a Gas Town host polecat session's, relay.env added to it, the shim's
// terminal variables and hostd's own (git's configuration, the rig's
// beads for bd, bd's hooks off, the polecat's temporary directory), and
// nothing else; it runs in the polecat's worktree.
func TestRelayEnvIsAPolecatSession(t *testing.T) {
	fake, err := filepath.Abs("testdata/fake-gt.sh")
	if err != nil {
		t.Fatal(err)
	}
	tw := NewTown(t)
	cfg := []byte("relay:\n  gt: " + fake + "\n  bd: " + fake + "\n  env: [DOLT_HOST=db.local, LANG=C.UTF-8]\n")
	if err := state.For(tw.Dir).Ensure(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(state.For(tw.Dir).Config(), cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	worktree := filepath.Join(tw.Dir, "gastown", "polecats", "bullet-farmer", "gastown")
	for _, d := range []string{worktree, filepath.Join(tw.Dir, "gastown", ".beads")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(tw.Dir, "rigs.json"), []byte(`{"rigs":{"gastown":{"beads":{"prefix":"ga"}}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	_, addr := tw.Serve()
	socket := filepath.Join(t.TempDir(), "agent.sock")
	Start(t, AgentEnv(addr, tw.Issue("gastown/bullet-farmer", time.Hour)), "gt-agent", "up", "--socket", socket)
	tw.WaitStatus(10*time.Second, Connected("bullet-farmer", ""))

	cmd := exec.Command(filepath.Join(BinDir, "bd"), "show", "env")
	cmd.Env = []string{"GT_AGENT_SOCKET=" + socket, "TERM=xterm-test", "GT_ROLE=evil", "PATH=/evil"}
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Split(strings.TrimSpace(string(out)), "\n")
	slices.Sort(got)
	home, _ := os.UserHomeDir()
	cwd, _ := os.Getwd()
	relay := state.For(tw.Dir).Relay()
	want := []string{
		"BD_ACTOR=gastown/polecats/bullet-farmer",
		"BD_BACKUP_ENABLED=false",
		"BD_DOLT_AUTO_COMMIT=off",
		"BD_NO_HOOKS=1", // hostd's: no bd hook runs
		"BEADS_AGENT_NAME=gastown/bullet-farmer",
		"BEADS_DIR=" + filepath.Join(tw.Dir, "gastown", ".beads"), // hostd's: the rig's beads, for bd
		"BEADS_DOLT_AUTO_START=0",
		"CLAUDECODE=",
		"DOLT_HOST=db.local", // relay.env
		"GIT_AUTHOR_NAME=bullet-farmer",
		"GIT_CEILING_DIRECTORIES=" + tw.Dir,
		// hostd's git configuration, above the repository's
		"GIT_CONFIG_COUNT=5",
		"GIT_CONFIG_GLOBAL=" + filepath.Join(relay, "gitconfig"),
		"GIT_CONFIG_KEY_0=core.hooksPath",
		"GIT_CONFIG_KEY_1=core.fsmonitor",
		"GIT_CONFIG_KEY_2=submodule.recurse",
		"GIT_CONFIG_KEY_3=protocol.allow",
		"GIT_CONFIG_KEY_4=protocol.file.allow",
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_VALUE_0=" + filepath.Join(relay, "no-hooks"),
		"GIT_CONFIG_VALUE_1=false",
		"GIT_CONFIG_VALUE_2=false",
		"GIT_CONFIG_VALUE_3=never",
		"GIT_CONFIG_VALUE_4=always",
		"GT_POLECAT=bullet-farmer",
		"GT_POLECAT_PATH=" + worktree,
		"GT_PROXY_CWD=" + cwd,
		"GT_PROXY_IDENTITY=gastown/bullet-farmer",
		"GT_RIG=gastown",
		"GT_ROLE=gastown/polecats/bullet-farmer",
		"GT_ROOT=" + tw.Dir,
		"GT_SESSION=ga-bullet-farmer", // the rig's prefix in rigs.json
		"GT_TOWN_ROOT=" + tw.Dir,
		"HOME=" + home,
		"LANG=C.UTF-8", // relay.env
		"NODE_OPTIONS=",
		"PATH=" + filepath.Dir(fake) + ":/usr/local/bin:/usr/bin:/bin",
		"POLECAT_SLOT=0",
		"PWD=" + worktree, // set by the stand-in's shell
		"TERM=xterm-test",
		"TMPDIR=" + filepath.Join(relay, "tmp", "gastown", "bullet-farmer"), // hostd's: the polecat's own
	}
	if !slices.Equal(got, want) {
		t.Errorf("host environment:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestRelayRefusals(t *testing.T) {
	r := newRelayRig(t, rigOpts{})
	marker := filepath.Join(r.scratch(t), "ran")
	cases := []struct {
		name string
		cmd  string
		args []string
		want string
	}{
		{"gt subcommand not allowed", "gt", []string{"nuke", "touch", marker}, "not allowed"},
		{"bd subcommand not allowed", "bd", []string{"delete", "touch", marker}, "not allowed"},
		{"no subcommand", "gt", nil, "needs a subcommand"},
		{"--actor", "bd", []string{"update", "touch", marker, "--actor", "mayor"}, "'bd update --actor' is refused"},
		{"--actor=", "bd", []string{"update", "touch", marker, "--actor=mayor"}, "'bd update --actor' is refused"},
		{"--identity", "gt", []string{"mail", "inbox", "--identity", "gastown/nux"}, "'gt mail inbox --identity' is refused"},
		{"--address=", "gt", []string{"mail", "check", "--address=x"}, "'gt mail check --address' is refused"},
		{"a host path", "bd", []string{"create", "touch", "--body-file", marker}, "must be '-'"},
		{"an unknown flag", "gt", []string{"nudge", "touch", marker, "--exec"}, "'gt nudge' has no flag --exec"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := r.run(t, nil, c.cmd, c.args...)
			if res.code != 255 || !strings.HasPrefix(string(res.stderr), c.cmd+": hostd (on the host): ") || !strings.Contains(string(res.stderr), c.want) {
				t.Errorf("exit %d, stderr %q; want 255 and hostd's %q, labelled as the host's", res.code, res.stderr, c.want)
			}
		})
	}
	// A client that is not our shim: identity env, other commands, junk.
	raw := []struct {
		name string
		req  wire.RelayRequest
		want string
	}{
		{"GT_ROLE from the container", wire.RelayRequest{Argv: byteArgs("gt", "nudge", "touch", marker), Env: byteArgs("GT_ROLE=mayor")}, "GT_ROLE"},
		{"BD_ACTOR from the container", wire.RelayRequest{Argv: byteArgs("bd", "show", "touch", marker), Env: byteArgs("BD_ACTOR=mayor")}, "BD_ACTOR"},
		{"env outside the allowlist", wire.RelayRequest{Argv: byteArgs("gt", "nudge", "touch", marker), Env: byteArgs("LD_PRELOAD=/tmp/x.so")}, "not relayed"},
		{"another command", wire.RelayRequest{Argv: byteArgs("sh", "-c", "touch "+marker)}, "only bd and gt"},
		{"a path as the command", wire.RelayRequest{Argv: byteArgs("/usr/bin/gt", "nudge", "touch", marker)}, "only bd and gt"},
	}
	for _, c := range raw {
		t.Run(c.name, func(t *testing.T) {
			if msg := rawRelay(t, r.socket, c.req); !strings.Contains(msg, c.want) {
				t.Errorf("refusal %q, want %q", msg, c.want)
			}
		})
	}
	t.Run("junk instead of a request", func(t *testing.T) {
		c, err := net.Dial("unix", r.socket)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_ = wire.WriteRelayFrame(c, wire.RelayFrameStdout, []byte("hello"))
		if msg := readUntilError(t, c); !strings.Contains(msg, "want a request") {
			t.Errorf("refusal %q", msg)
		}
	})
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("a refused command ran on the host")
	}
	if res := r.run(t, nil, "gt", "nudge", "exit", "0"); res.code != 0 {
		t.Fatalf("the polecat cannot relay after refusals: %d %s", res.code, res.stderr)
	}
}

func byteArgs(s ...string) [][]byte {
	out := make([][]byte, len(s))
	for i, x := range s {
		out[i] = []byte(x)
	}
	return out
}

// rawRelay sends req on the agent socket as a hand-made client and returns
// the refusal hostd sends.
func rawRelay(t *testing.T, socket string, req wire.RelayRequest) string {
	t.Helper()
	c, err := net.Dial("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	p, err := wire.EncodeRelayRequest(req)
	if err != nil {
		t.Fatal(err)
	}
	if err := wire.WriteRelayFrame(c, wire.RelayFrameRequest, p); err != nil {
		t.Fatal(err)
	}
	return readUntilError(t, c)
}

func readUntilError(t *testing.T, c net.Conn) string {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	fr := wire.NewRelayFrameReader(c)
	for {
		typ, p, err := fr.Next()
		if err != nil {
			t.Fatalf("no refusal: %v", err)
		}
		switch typ {
		case wire.RelayFrameError:
			return string(p)
		case wire.RelayFrameExit:
			t.Fatalf("command ran: %s", p)
		}
	}
}

// pidFrom waits for the stand-in to write its pid.
func pidFrom(t *testing.T, path string) int {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(25 * time.Millisecond) {
		if b, err := os.ReadFile(path); err == nil && len(bytes.TrimSpace(b)) > 0 {
			pid, err := strconv.Atoi(string(bytes.TrimSpace(b)))
			if err == nil {
				return pid
			}
		}
	}
	t.Fatal("the host command never started")
	return 0
}

// waitGone waits until pid no longer exists.
func waitGone(t *testing.T, pid int, d time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	for time.Since(start) < d {
		if syscall.Kill(pid, 0) != nil {
			return time.Since(start)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("host process %d still running %v later", pid, d)
	return 0
}

func TestRelaySignalsAndKills(t *testing.T) {
	// hostd notices a cut tunnel after its idle timeout (10 s by default,
	// which a 10 s wait below raced): 3 s here.
	r := newRelayRig(t, rigOpts{viaRelay: true, serve: []string{"--keepalive", "1s", "--idle-timeout", "3s"}})

	t.Run("Ctrl-C reaches the host process", func(t *testing.T) {
		cmd := r.command("gt", "nudge", "trap", filepath.Join(r.scratch(t), "pid"))
		out, _ := cmd.StdoutPipe()
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 6)
		if _, err := io.ReadFull(out, buf); err != nil || string(buf) != "ready\n" {
			t.Fatalf("stand-in not ready: %q %v", buf, err)
		}
		_ = cmd.Process.Signal(syscall.SIGINT)
		rest, _ := io.ReadAll(out)
		_ = cmd.Wait()
		if !strings.Contains(string(rest), "got-INT") || cmd.ProcessState.ExitCode() != 130 {
			t.Errorf("after SIGINT: output %q, exit %d %s (stderr %s); want got-INT and 130", rest, cmd.ProcessState.ExitCode(), cmd.ProcessState, stderr.Bytes())
		}
	})

	t.Run("killing the shim kills the host process", func(t *testing.T) {
		pidFile := filepath.Join(r.scratch(t), "pid")
		cmd := r.command("gt", "nudge", "sleep", pidFile, "60")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		pid := pidFrom(t, pidFile)
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Logf("host process gone %v after the shim was killed", waitGone(t, pid, 3*time.Second))
	})

	t.Run("cutting the tunnel kills the host process", func(t *testing.T) {
		pidFile := filepath.Join(r.scratch(t), "pid")
		cmd := r.command("gt", "nudge", "sleep", pidFile, "60")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		pid := pidFrom(t, pidFile)
		r.relay.Cut(true)
		defer r.relay.Cut(false)
		t.Logf("host process gone %v after the tunnel was cut", waitGone(t, pid, 10*time.Second))
		_ = cmd.Wait()
		if cmd.ProcessState.ExitCode() != 255 || !strings.Contains(stderr.String(), "lost the connection") {
			t.Errorf("shim after the cut: exit %d, %q", cmd.ProcessState.ExitCode(), stderr.String())
		}
	})
}

func TestRelayTunnelDown(t *testing.T) {
	r := newRelayRig(t, rigOpts{agent: []string{"--relay-wait", "1s"}})
	noAgent := &relayRig{socket: filepath.Join(t.TempDir(), "none.sock")}
	if res := noAgent.run(t, nil, "bd", "ready"); res.code != 255 || !strings.Contains(string(res.stderr), "bd: gt-agent is not running") {
		t.Errorf("no agent: exit %d, %q", res.code, res.stderr)
	}
	_ = r.hostd.Cmd.Process.Signal(syscall.SIGTERM)
	_ = r.hostd.Exited(t, 5*time.Second)
	start := time.Now()
	res := r.run(t, nil, "gt", "nudge", "exit", "0")
	if res.code != 255 || !strings.Contains(string(res.stderr), "did not come back within 1s") {
		t.Errorf("tunnel down: exit %d, %q", res.code, res.stderr)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("shim gave up after %v, want about the 1s wait", d)
	}
	if n := strings.Count(strings.TrimSpace(string(res.stderr)), "\n"); n != 0 {
		t.Errorf("want one line, got %q", res.stderr)
	}
}

// TestServeRefusesTheShim: with the project's bin/ ahead of the host's gt
// on PATH (bin/gt is the container's shim), hostd serve does not start: it
// names the file and the flag that fixes it, instead of relaying each
// command back to a gt-agent.
func TestServeRefusesTheShim(t *testing.T) {
	tw := NewTown(t)
	path := "PATH=" + BinDir + string(os.PathListSeparator) + os.Getenv("PATH")
	p := Start(t, []string{path}, "hostd", "--town", tw.Dir, "serve", "--listen", tunneltest.FreeAddr(t))
	var ee *exec.ExitError
	if err := p.Exited(t, 10*time.Second); !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("hostd serve with the shim as gt: %v, want exit 1\n%s", err, p.Output())
	}
	for _, want := range []string{"gt resolves to " + filepath.Join(BinDir, "gt"), "--relay-gt", "bd resolves to " + filepath.Join(BinDir, "bd"), "--relay-bd"} {
		if !strings.Contains(p.Output(), want) {
			t.Errorf("output lacks %q:\n%s", want, p.Output())
		}
	}
}

// TestRelayConfinementShown: hostd status says how relayed commands are
// confined (Landlock here), and where the kernel cannot confine them it
// says so and relaying is refused, naming the setting that would allow
// it unconfined.
func TestRelayConfinementShown(t *testing.T) {
	r := newRelayRig(t, rigOpts{})
	st := r.tw.WaitStatus(5*time.Second, func(api.Status) bool { return true })
	text := r.tw.Run("status")
	res := r.run(t, nil, "gt", "nudge", "exit", "0")
	switch {
	case st.RelayConfined:
		if !strings.HasPrefix(st.RelayConfinement, "landlock (ABI ") || st.RelayRefused || res.code != 0 || strings.Contains(text, "relay ") {
			t.Errorf("confined: status %q refused %v, text %q; a relay exited %d (%s)", st.RelayConfinement, st.RelayRefused, text, res.code, res.stderr)
		}
	default:
		if !st.RelayRefused || !strings.Contains(text, "relay REFUSED") || res.code != 255 || !strings.Contains(string(res.stderr), "relay.allow_unconfined") {
			t.Errorf("unconfined: status %q refused %v, text %q; a relay exited %d (%s)", st.RelayConfinement, st.RelayRefused, text, res.code, res.stderr)
		}
	}
}
