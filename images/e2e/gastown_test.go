//go:build e2e && gastown

package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/polecat-sidecar/sidecar/hostd/api"
	harness "github.com/polecat-sidecar/sidecar/hostd/e2e"
	"github.com/polecat-sidecar/sidecar/hostd/state"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// The Gas Town suite ('make e2e-gastown'): the real gt, bd and dolt
// (GASTOWN_TOOLS, built by 'make gastown-tools'), a town made as an
// operator makes one (gt install, gt rig add on a local origin), and two
// polecats of one rig started by gt sling, named by Gas Town's name pool:
// one on the host as Gas Town runs polecats today, and one after the
// rig's settings name hostd run as runtime.exec_wrapper, so Gas Town's
// own pane runs hostd run and the session runs in that polecat's
// container. Each Gas Town flow runs for both, and the table compares
// them.
// taskName is the title of the bead slung to each polecat.
const taskName = "the same task"

// gasTown is the suite's town and what it needs to drive it.
type gasTown struct {
	*harness.GasTown // the town, gt install made
	t                *testing.T
	r                *rig
	rig              string // the rig: gs<run id>, so that its sandboxes' names (gt-<rig>-<name>) are this run's
	paneLog          string // the stand-in claude's record of submitted lines, on the host and in the container
	// stopOnce stops what Gas Town started once, at the test's end or
	// on a signal.
	stopOnce sync.Once
	host     string // the host polecat's name
	box      string // the container polecat's name
	boxes    boxes  // the runtime of the container polecat's sandbox
	rows     []flowRow
}

// flowRow is one line of the table.
type flowRow struct {
	flow, host, box string
	same            bool
	note            string
}

// outcome is what a command did: its exit status and its output
// (stdout and stderr).
type outcome struct {
	code int
	out  string
}

// TestGasTown runs Gas Town's flows for a host polecat and for a polecat
// whose session runs in a container through hostd run, and prints the
// table: flow | host polecat | container polecat | same?.
func TestGasTown(t *testing.T) {
	tools := os.Getenv("GASTOWN_TOOLS")
	if tools == "" {
		t.Fatal("GASTOWN_TOOLS names no directory with gt, bd and dolt: run 'make e2e-gastown', which builds them")
	}
	start := time.Now()
	r := newNetwork(t)
	g := &gasTown{t: t, r: r, rig: "gs" + r.id, paneLog: "/tmp/gastown-e2e-" + r.id + "-pane.log"}
	g.boxes = dockerBoxes{rig: g.rig}
	if os.Getenv("E2E_RUNTIME") == "kubernetes" {
		g.boxes = newKubeBoxes(t, r, g.rig)
	}
	t.Cleanup(func() { _ = os.Remove(g.paneLog) })
	defer g.print()
	g.install(tools)
	summary.add("gastown: gt install, gt rig add, hostd on the town", true, time.Since(start))

	step := func(name string, f func(t *testing.T)) {
		r.check("gastown: "+name, f)
		if t.Failed() {
			t.Fatalf("the host panes:\n%s\n---\n%s\nhostd:\n%s", g.screen(g.host), g.screen(g.box), r.hostd.Output())
		}
	}
	var hostUp string
	step("gt sling starts the host polecat's session", func(t *testing.T) {
		start := time.Now()
		g.host, _ = g.sling(t)
		hostUp = g.ready(t, g.host) + fmt.Sprintf(" in %.1fs", time.Since(start).Seconds())
	})
	step("gt sling starts the container polecat's session through hostd run", func(t *testing.T) {
		g.execWrapper(t)
		start := time.Now()
		g.box, _ = g.sling(t)
		undo.push(func() { g.boxes.remove(g.box) })
		box := g.ready(t, g.box) + fmt.Sprintf(" in %.1fs", time.Since(start).Seconds())
		if got := strings.TrimSpace(g.tmux(t, "display-message", "-p", "-t", session(g.box), "#{pane_current_command}")); got != "hostd" {
			t.Fatalf("%s's pane runs %q, want hostd (the exec wrapper)", g.box, got)
		}
		r.wait(60*time.Second, g.box+" connected", harness.Connected(g.box, ""))
		g.row("gt sling: session starts", hostUp, box+" (pane: hostd run; the session in its "+g.boxes.kind()+" sandbox)", true,
			"the host polecat is slung before the rig names hostd run as its exec wrapper")
	})

	// Each flow as the polecat's agent runs it: on the host in its
	// worktree with its session's environment; in the container in its
	// clone, where gt and bd are the shim relaying to hostd.
	// A flow that fails is in the table and fails the test; the next
	// flows still run.
	flow := func(name string, f func(t *testing.T)) { r.check("gastown: "+name, f) }
	compare := func(name string, argv ...string) {
		flow(name, func(t *testing.T) { g.compareOutcomes(t, name, g.run(t, true, argv...), g.run(t, false, argv...)) })
	}
	compare("gt prime", "gt", "prime")
	compare("gt hook", "gt", "hook")
	compare("gt mail send (to itself)", "gt", "mail", "send", "%ME%", "-s", "note to self", "-m", "remember the milk")
	compare("gt mail inbox", "gt", "mail", "inbox")
	var hostBead, boxBead string
	flow("bd create", func(t *testing.T) {
		h, b := g.run(t, true, "bd", "create", "made by the polecat"), g.run(t, false, "bd", "create", "made by the polecat")
		hostBead, boxBead = beadID(h.out), beadID(b.out)
		g.compareOutcomes(t, "bd create", h, b)
	})
	flow("bd update", func(t *testing.T) {
		g.compareOutcomes(t, "bd update --status in_progress",
			g.run(t, true, "bd", "update", hostBead, "--status", "in_progress"), g.run(t, false, "bd", "update", boxBead, "--status", "in_progress"))
	})
	flow("bd show", func(t *testing.T) {
		g.compareOutcomes(t, "bd show (owner: the polecat)", g.run(t, true, "bd", "show", hostBead), g.run(t, false, "bd", "show", boxBead))
	})
	flow("bd close", func(t *testing.T) {
		g.compareOutcomes(t, "bd close", g.run(t, true, "bd", "close", hostBead), g.run(t, false, "bd", "close", boxBead))
	})
	flow("hostd restarted mid-session, then gt nudge and gt peek reach the session", func(t *testing.T) {
		g.r.restartHostd()
		g.r.wait(60*time.Second, g.box+" connected again", harness.Connected(g.box, ""))
		h, b := g.nudgePeek(t, g.host), g.nudgePeek(t, g.box)
		g.checkRow(t, "hostd restarted; gt nudge, then gt peek", h, b, h == b,
			"hostd serve killed and started again while both sessions run: the sandbox's agent reconnects and hostd finds its sandbox by its labels")
	})
	flow("gt polecat list: both alive", func(t *testing.T) {
		h, b := g.listed(t, g.host), g.listed(t, g.box)
		g.checkRow(t, "gt polecat list (liveness)", h, b, h == b && h == "working", "")
	})
	flow("gt session restart cycles the session; the container and its uncommitted work stay", func(t *testing.T) {
		h, b := g.restart(t, g.host), g.restart(t, g.box)
		g.checkRow(t, "gt session restart (session cycle)", h, b, h == b, "")
	})
	flow("gt handoff --cycle", func(t *testing.T) {
		h, b := g.cycle(t, g.host), g.cycle(t, g.box)
		g.checkRow(t, "gt handoff --cycle (from the agent)", h, b, h == b,
			"relayed, gt runs outside any tmux pane and saves the state; hostd then respawns the pane hostd run recorded, "+
				"with Gas Town's startup command (its own restart command leaves out runtime.exec_wrapper)")
	})
	flow("the sandbox killed under the session: the next session has the work", func(t *testing.T) {
		b := g.killed(t, g.box)
		g.checkRow(t, "sandbox killed ("+g.boxes.kind()+"), gt session restart", "(no sandbox)", b,
			strings.HasSuffix(b, "; uncommitted work kept; listed working"), "")
	})
	firstMR := map[string]string{}
	flow("gt done after a commit makes the merge request", func(t *testing.T) {
		h, hd := g.done(t, g.host)
		b, bd := g.done(t, g.box)
		firstMR[g.host], firstMR[g.box] = hd.mr, bd.mr
		g.checkRow(t, "commit, gt done (merge request)", h, b, h == b, fmt.Sprintf(
			"the container pushes its branch to hostd first, which updates the host worktree; authors: host %s, container %s "+
				"(Gas Town's gt handoff --cycle restart sets GIT_AUTHOR_NAME=<rig>/polecats/<name>, its first start <name>)", hd.author, bd.author))
	})
	flow("a reused polecat works on its new branch: gt sling of the next bead, a commit, gt done", func(t *testing.T) {
		// Gas Town reuses the first idle polecat by name (FindIdlePolecat).
		res := map[string]string{}
		for _, name := range slices.Sorted(slices.Values([]string{g.host, g.box})) {
			res[name] = g.reuse(t, name, firstMR[name])
		}
		h, b := res[g.host], res[g.box]
		g.checkRow(t, "gt done, gt sling: reused, commit, gt done", h, b, h == b,
			"gt session stop after gt done makes the polecat idle; Gas Town gives it a new branch in its worktree, "+
				"and hostd run brings the sandbox's clone to it (uncommitted work there kept in a stash), so the new work is a new merge request")
	})
	flow("gt polecat nuke", func(t *testing.T) {
		h, b := g.nuke(t, g.host), g.nuke(t, g.box)
		g.checkRow(t, "gt polecat nuke", h, b, h == strings.TrimSuffix(b, nukedInBox), "")
	})
	// A sling whose sandbox cannot start: hostd run's reason in hostd
	// status within 30 s (Gas Town's own wait for the prompt lasts
	// minutes). A host polecat has no sandbox to fail.
	flow("gt sling with a missing image fails with the reason in hostd status", func(t *testing.T) {
		missing := "polecat-e2e-missing:" + g.r.id
		g.hostdConfig(t, "image: "+g.r.image, "image: "+missing)
		defer g.hostdConfig(t, "image: "+missing, "image: "+g.r.image)
		res := g.failedSling(t, "is not among "+g.boxes.kind()+"'s images", nil)
		g.checkRow(t, "gt sling, sandbox.image missing", "(no sandbox)", res, strings.HasPrefix(res, "failed in "), "")
	})
	flow("gt sling with hostd down fails with the reason in hostd status", func(t *testing.T) {
		_ = g.r.hostd.Cmd.Process.Kill()
		_ = g.r.hostd.Exited(t, 5*time.Second)
		res := g.failedSling(t, "hostd is not running", func() {
			// hostd run records the failure itself; serve shows it once
			// it runs again.
			eventually(t, 30*time.Second, "hostd run's record of the failure", func() bool {
				m, _ := filepath.Glob(filepath.Join(state.For(g.Dir).StartFailures(), g.rig, "*.json"))
				for _, f := range m {
					if b, _ := os.ReadFile(f); strings.Contains(string(b), "hostd is not running") {
						return true
					}
				}
				return false
			})
			g.r.startHostd()
		})
		g.checkRow(t, "gt sling, hostd serve down", "(no sandbox)", res, strings.HasPrefix(res, "failed in "), "")
	})
}

// hostdConfig replaces old with new in hostd's config.yaml.
func (g *gasTown) hostdConfig(t *testing.T, old, new string) {
	path := filepath.Join(g.Dir, ".runtime", "hostd", "config.yaml")
	b, err := os.ReadFile(path)
	if err != nil || !strings.Contains(string(b), old) {
		t.Fatalf("%s has no %q: %v", path, old, err)
	}
	harness.WriteFile(t, path, strings.Replace(string(b), old, new, 1))
}

// failedSling slings a bead to the rig (a new polecat, through hostd run)
// whose sandbox cannot start, runs between (when given) once gt sling
// runs, and says how long it took hostd status to show the polecat's
// failed start with want in its reason. The polecat is nuked after.
func (g *gasTown) failedSling(t *testing.T, want string, between func()) string {
	g.execWrapper(t)
	bd := exec.Command(filepath.Join(g.Tools, "bd"), "create", "a task that cannot start")
	bd.Dir = filepath.Join(g.Dir, g.rig)
	out, err := bd.CombinedOutput()
	id := beadID(string(out))
	if err != nil || id == "" {
		t.Fatalf("bd create: %v\n%s", err, out)
	}
	start := time.Now()
	sling := g.Gt("sling", id, g.rig, "--no-boot", "--no-convoy")
	var slung strings.Builder
	sling.Stdout, sling.Stderr = &slung, &slung
	if err := sling.Start(); err != nil {
		t.Fatal(err)
	}
	ended := make(chan struct{})
	go func() { _ = sling.Wait(); close(ended) }()
	defer func() { _ = sling.Process.Kill(); <-ended }() // Gas Town waits minutes for a prompt
	if between != nil {
		between()
	}
	defer func() {
		if t.Failed() { // what hostd run recorded, and what Gas Town left
			records, _ := filepath.Glob(filepath.Join(state.For(g.Dir).StartFailures(), g.rig, "*.json"))
			polecats, _ := filepath.Glob(filepath.Join(g.Dir, g.rig, "polecats", "*"))
			asked := time.Now()
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			st, err := g.r.town.Client().Status(ctx)
			cancel()
			t.Logf("start-failure records: %v\npolecats: %v\nhostd status's start failures, in %v: %+v (%v)\ngt sling:\n%s",
				records, polecats, time.Since(asked), st.StartFailures, err, slung.String())
		}
	}()
	var failed wire.Identity
	g.r.wait(30*time.Second-time.Since(start), "the failed start in hostd status", func(st api.Status) bool {
		for _, f := range st.StartFailures {
			if f.Identity.Rig == g.rig && strings.Contains(f.Reason, want) {
				failed = wire.Identity(f.Identity)
				return true
			}
		}
		return false
	})
	took := time.Since(start)
	if out, err := g.Gt("polecat", "nuke", failed.String(), "--force").CombinedOutput(); err != nil {
		t.Logf("gt polecat nuke %s: %v %s", failed, err, out)
	}
	if gone, left := g.boxes.gone(failed.Name); !gone {
		return fmt.Sprintf("failed in %.0fs, but left %s", took.Seconds(), left)
	}
	return fmt.Sprintf("failed in %.0fs, the reason in hostd status; no sandbox", took.Seconds())
}

// install makes the town the way an operator does with the tools
// (harness.NewGasTown: the operator's environment, with the stand-in
// claude on PATH, and gt install, whose town's name picks its tmux
// socket: this run's), adds the rig and starts hostd on it.
func (g *gasTown) install(tools string) {
	t, r := g.t, g.r
	standin := t.TempDir()
	if err := os.Symlink(r.binary, filepath.Join(standin, "claude")); err != nil {
		t.Fatal(err)
	}
	g.GasTown = harness.NewGasTown(t, tools, "gtsuite"+r.id, standin)
	t.Cleanup(g.stop)
	undo.push(g.stop)        // also when the suite is interrupted
	g.AddRig(t, g.rig, "gt") // sessions gt-<name>, beads gt-*

	// The stand-in claude: this test binary as the pane program (prompt
	// ❯, records what is typed), as the rig's runtime. Not a custom agent
	// (the rig's "agent"): Gas Town takes a rig's "runtime", where the
	// exec wrapper goes, instead of its "agent" when both are set.
	g.rigSettings(t, func(s map[string]any) {
		s["runtime"] = map[string]any{
			"provider": "claude", "command": "claude", "args": []string{"--dangerously-skip-permissions"},
			"env": map[string]string{harness.PaneEnv: "tui", harness.PaneLogEnv: g.paneLog},
		}
	})

	r.town = harness.TownAt(t, g.Dir)
	// The beat interval in config.yaml, where hostd run reads it too and
	// gives it to the sandbox's agent: hostd serve judges by it.
	config := fmt.Sprintf(`liveness:
  beat_interval: 1s
sandbox:
  image: %s
  url: https://%s
  env: [%s, %s]
`, r.image, r.addr, harness.PaneEnv, harness.PaneLogEnv)
	if k, ok := g.boxes.(kubeBoxes); ok {
		config += k.config
	} else {
		config += fmt.Sprintf("  network: %s\n  mounts: [\"%s:/usr/local/bin/claude:ro\"]\n", r.net, r.binary)
	}
	harness.WriteFile(t, filepath.Join(g.Dir, ".runtime", "hostd", "config.yaml"), config)
	r.serve = []string{"--server-name", r.gateway, "--relay-gt", filepath.Join(g.Tools, "gt"), "--relay-bd", filepath.Join(g.Tools, "bd"),
		"--sandbox-reap", "1s", "--metrics-listen", r.metrics}
	r.startHostd()
	if d, ok := g.boxes.(dockerBoxes); ok {
		d.removeStale()
	}
}

// stop ends what Gas Town started for the town: its tmux server (the
// polecats' panes, hostd run among them) and its Dolt server.
func (g *gasTown) stop() {
	g.stopOnce.Do(g.stopNow)
}

// stopNow is stop's work: tmux's kill-server, then the Dolt server.
func (g *gasTown) stopNow() {
	if sock := g.socket(); sock != "" {
		_ = exec.Command("tmux", "-S", sock, "kill-server").Run()
		_ = os.Remove(sock)
	}
	g.Stop()
}

// execWrapper names hostd run as the rig's runtime.exec_wrapper, as
// docs/migrating.md tells an operator to.
func (g *gasTown) execWrapper(t *testing.T) {
	g.rigSettings(t, func(s map[string]any) {
		s["runtime"].(map[string]any)["exec_wrapper"] = []string{"hostd", "run", "--"}
	})
}

// rigSettings edits <town>/<rig>/settings/config.json.
func (g *gasTown) rigSettings(t *testing.T, edit func(map[string]any)) {
	path := filepath.Join(g.Dir, g.rig, "settings", "config.json")
	s := map[string]any{}
	if b, err := os.ReadFile(path); err == nil {
		if err := json.Unmarshal(b, &s); err != nil {
			t.Fatalf("reading %s: %v", path, err)
		}
	}
	edit(s)
	b, _ := json.MarshalIndent(s, "", "  ")
	harness.WriteFile(t, path, string(b))
}

// sling files a bead in the rig and slings it to the rig: gt makes a
// polecat (its name from the pool, its worktree on a polecat branch), or
// reuses an idle one (a new branch in its worktree), and starts its
// session. It returns the polecat's name and the bead.
func (g *gasTown) sling(t *testing.T) (name, bead string) {
	bd := exec.Command(filepath.Join(g.Tools, "bd"), "create", taskName)
	bd.Dir = filepath.Join(g.Dir, g.rig)
	out, err := bd.CombinedOutput()
	id := beadID(string(out))
	if err != nil || id == "" {
		t.Fatalf("bd create: %v\n%s", err, out)
	}
	out = []byte(g.GtMust(t, "sling", id, g.rig, "--no-boot", "--no-convoy"))
	m := regexp.MustCompile(`(?:Created|Reusing idle) polecat: (\S+)`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("gt sling named no polecat:\n%s", out)
	}
	return string(m[1]), id
}

// session is a polecat's tmux session: Gas Town's <rig prefix>-<name>,
// the prefix gt (gt rig add --prefix).
func session(name string) string { return "gt-" + name }

// worktree is a polecat's worktree on the host.
func (g *gasTown) worktree(name string) string {
	return filepath.Join(g.Dir, g.rig, "polecats", name, g.rig)
}

// socket is the town's tmux socket, which Gas Town names after the town.
func (g *gasTown) socket() string {
	dir := os.Getenv("TMUX_TMPDIR")
	if dir == "" {
		dir = "/tmp"
	}
	m, _ := filepath.Glob(filepath.Join(dir, fmt.Sprintf("tmux-%d", os.Getuid()), "gtsuite"+g.r.id+"-*"))
	if len(m) == 0 {
		return ""
	}
	return m[0]
}

// tmux runs tmux on the town's socket.
func (g *gasTown) tmux(t *testing.T, args ...string) string {
	t.Helper()
	sock := g.socket()
	if sock == "" {
		t.Fatal("Gas Town has no tmux server for the town")
	}
	out, err := exec.Command("tmux", append([]string{"-S", sock}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("tmux %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// screen is what a polecat's host pane shows ("" when there is none).
func (g *gasTown) screen(name string) string {
	sock := g.socket()
	if sock == "" {
		return ""
	}
	out, _ := exec.Command("tmux", "-S", sock, "capture-pane", "-p", "-t", session(name)).CombinedOutput()
	return string(out)
}

// ready waits for the stand-in's prompt on the polecat's host pane.
func (g *gasTown) ready(t *testing.T, name string) string {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); !strings.Contains(g.screen(name), "❯"); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			pane, _ := exec.Command("tmux", "-S", g.socket(), "display-message", "-p", "-t", session(name),
				"dead=#{pane_dead} status=#{pane_dead_status} command=#{pane_current_command} start=#{pane_start_command}").CombinedOutput()
			t.Fatalf("no prompt on %s's host pane within 60s; the pane: %s\nits screen:\n%s", name, pane, g.screen(name))
		}
	}
	return "ok: prompt on the pane"
}

// row adds a line to the table.
func (g *gasTown) row(flow, host, box string, same bool, note string) {
	g.rows = append(g.rows, flowRow{flow, host, box, same, note})
}

// checkRow adds a line to the table and fails the flow when the two
// polecats differ.
func (g *gasTown) checkRow(t *testing.T, flow, host, box string, same bool, note string) {
	t.Helper()
	g.row(flow, host, box, same, note)
	if !same {
		t.Errorf("%s: host polecat %q, container polecat %q", flow, host, box)
	}
}

// print writes the table.
func (g *gasTown) print() {
	if len(g.rows) == 0 {
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n%-40s | %-42s | %-42s | %s\n", "flow", "host polecat", "container polecat", "same?")
	for _, r := range g.rows {
		same := "yes"
		if !r.same {
			same = "NO"
		}
		fmt.Fprintf(&b, "%-40s | %-42s | %-42s | %s\n", r.flow, r.host, r.box, same)
		if r.note != "" {
			fmt.Fprintf(&b, "%-40s   note: %s\n", "", r.note)
		}
	}
	fmt.Print(b.String())
}

// run runs argv as the named polecat's agent would: on the host (host)
// in its worktree with the environment of its session's process; in the
// container in its clone. %ME% in argv is the polecat's address.
func (g *gasTown) run(t *testing.T, host bool, argv ...string) outcome {
	t.Helper()
	name := g.box
	if host {
		name = g.host
	}
	argv = append([]string(nil), argv...)
	for i, a := range argv {
		argv[i] = strings.ReplaceAll(a, "%ME%", g.rig+"/"+name)
	}
	var cmd *exec.Cmd
	if host {
		cmd = exec.Command(argv[0], argv[1:]...)
		cmd.Dir, cmd.Env = g.worktree(name), g.sessionEnv(t, name)
	} else {
		cmd = g.boxes.command(name, "/work/"+g.rig, g.containerSessionEnv(t, name), argv...)
	}
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return outcome{0, string(out)}
	case errors.As(err, &ee):
		return outcome{ee.ExitCode(), string(out)}
	}
	t.Fatalf("%s: %v\n%s", strings.Join(argv, " "), err, out)
	return outcome{}
}

// sessionEnv is the environment of the process in the polecat's host
// pane: what Gas Town gave its agent.
func (g *gasTown) sessionEnv(t *testing.T, name string) []string {
	t.Helper()
	pid := strings.TrimSpace(g.tmux(t, "display-message", "-p", "-t", session(name), "#{pane_pid}"))
	b, err := os.ReadFile("/proc/" + pid + "/environ")
	if err != nil {
		t.Fatalf("reading %s's session environment: %v", name, err)
	}
	return strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
}

// containerSessionEnv is the environment of the session in the
// polecat's container: what hostd run passed on from Gas Town.
func (g *gasTown) containerSessionEnv(t *testing.T, name string) []string {
	t.Helper()
	out, err := output(g.boxes, name, "sh", "-c", `tr '\0' '\n' < /proc/$(tmux display-message -p -t polecat '#{pane_pid}')/environ`)
	if err != nil {
		t.Fatalf("reading the session environment in %s's sandbox: %v %s", name, err, out)
	}
	return strings.Split(strings.TrimSpace(out), "\n")
}

// compareOutcomes adds the flow's row: the same exit status and the same
// output once names, ids, times and process ids are set aside.
func (g *gasTown) compareOutcomes(t *testing.T, flow string, h, b outcome) {
	t.Helper()
	nh, nb := normalize(h.out, g.host), normalize(b.out, g.box)
	same := h.code == b.code && nh == nb
	note := ""
	if !same {
		note = firstDifference(nh, nb)
		t.Errorf("%s: the host polecat and the container polecat differ: %s\nhost (exit %d):\n%s\ncontainer (exit %d):\n%s", flow, note, h.code, h.out, b.code, b.out)
	}
	g.row(flow, describe(h), describe(b), same, note)
}

// describe is an outcome in a table cell.
func describe(o outcome) string {
	return fmt.Sprintf("exit %d, %d lines", o.code, strings.Count(strings.TrimRight(o.out, "\n"), "\n")+1)
}

// What differs between two polecats' outputs and is set aside.
var (
	reTime = regexp.MustCompile(`\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?`)
	reID   = regexp.MustCompile(`\b(gt|hq)-(wisp-)?[a-z0-9]{3,8}\b`)
	rePID  = regexp.MustCompile(`(pid:|-)\d{2,}\b`)
	reTS36 = regexp.MustCompile(`@[a-z0-9]{6,10}\b`)
	reAgo  = regexp.MustCompile(`\b\d+(\.\d+)?(ms|s|m|h|d)( ago)?\b`)
)

// normalize sets aside what differs between two polecats doing the same
// thing: the polecat's name, bead ids, times, process ids, durations.
func normalize(s, name string) string {
	s = regexp.MustCompile(`\b`+regexp.QuoteMeta(name)+`\b`).ReplaceAllString(s, "NAME")
	s = reTime.ReplaceAllString(s, "TIME")
	s = reID.ReplaceAllString(s, "ID")
	s = reTS36.ReplaceAllString(s, "@TS")
	s = rePID.ReplaceAllString(s, "${1}N")
	return reAgo.ReplaceAllString(s, "DUR")
}

// firstDifference is the first line where a and b differ.
func firstDifference(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := 0; i < len(al) || i < len(bl); i++ {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y {
			return fmt.Sprintf("line %d: host %q, container %q", i+1, x, y)
		}
	}
	return "none"
}

// firstLine is s's first line.
func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return line
}

// beadID is the id bd create printed.
func beadID(out string) string {
	m := regexp.MustCompile(`Created issue: (\S+)`).FindStringSubmatch(out)
	if m == nil {
		return ""
	}
	return m[1]
}

// nudgeText is what the operator nudges both polecats with.
const nudgeText = "hello from the operator"

// nudgePeek nudges the polecat from the town, as the operator (or the
// Witness) does, then checks that the line reached the agent and that
// gt peek shows it.
func (g *gasTown) nudgePeek(t *testing.T, name string) string {
	out, err := g.Gt("nudge", g.rig+"/"+name, nudgeText).CombinedOutput()
	if err != nil {
		log, _ := os.ReadFile(g.paneLog)
		if name == g.box {
			l, _ := output(g.boxes, name, "cat", g.paneLog)
			log = []byte(l)
		}
		t.Logf("gt nudge %s: %v\n%s\nits screen:\n%s\nwhat the agent got:\n%s", name, err, out, g.screen(name), log)
		return fmt.Sprintf("nudge failed: %s", firstLine(string(out)))
	}
	res := "nudge exit 0"
	typed := func() bool {
		var log string
		if name == g.host {
			b, _ := os.ReadFile(g.paneLog)
			log = string(b)
		} else {
			log, _ = output(g.boxes, name, "cat", g.paneLog)
		}
		return strings.Contains(log, nudgeText)
	}
	deadline := time.Now().Add(20 * time.Second)
	for !typed() && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
	}
	if !typed() {
		t.Logf("%s's screen after the nudge:\n%s", name, g.screen(name))
		return res + "; the agent got nothing"
	}
	res += "; the agent got the line"
	peek, err := g.Gt("peek", g.rig+"/"+name).CombinedOutput()
	if err != nil || !strings.Contains(string(peek), nudgeText) {
		return res + fmt.Sprintf("; gt peek does not show it (%v)", err)
	}
	return res + "; gt peek shows it"
}

// listed is the polecat's state in gt polecat list.
func (g *gasTown) listed(t *testing.T, name string) string {
	out := g.GtMust(t, "polecat", "list", g.rig)
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		for i := 0; i+1 < len(f); i++ {
			if f[i] == g.rig+"/"+name {
				return f[i+1]
			}
		}
	}
	return "not listed"
}

// panePID is the process in the polecat's host pane.
func (g *gasTown) panePID(t *testing.T, name string) string {
	return strings.TrimSpace(g.tmux(t, "display-message", "-p", "-t", session(name), "#{pane_pid}"))
}

// wip writes (or with rm, removes) an uncommitted file in the polecat's
// working copy: the host worktree, or the clone in the container.
func (g *gasTown) wip(t *testing.T, name string, rm bool) {
	if name == g.host {
		p := filepath.Join(g.worktree(name), "wip.txt")
		if rm {
			_ = os.Remove(p)
		} else {
			harness.WriteFile(t, p, "wip\n")
		}
		return
	}
	script := "echo wip > /work/" + g.rig + "/wip.txt"
	if rm {
		script = "rm -f /work/" + g.rig + "/wip.txt"
	}
	if out, err := output(g.boxes, name, "sh", "-c", script); err != nil {
		t.Fatalf("%s: %v %s", script, err, out)
	}
}

// hasWIP says whether the uncommitted file is still there.
func (g *gasTown) hasWIP(name string) bool {
	if name == g.host {
		_, err := os.Stat(filepath.Join(g.worktree(name), "wip.txt"))
		return err == nil
	}
	_, err := output(g.boxes, name, "test", "-e", "/work/"+g.rig+"/wip.txt")
	return err == nil
}

// restart cycles the polecat's session the way the Witness and the
// operator do (gt session restart), with uncommitted work in its working
// copy, and says what the next session found.
func (g *gasTown) restart(t *testing.T, name string) string {
	g.wip(t, name, false)
	defer g.wip(t, name, true)
	before, box := g.panePID(t, name), g.boxes.id(name)
	if out, err := g.Gt("session", "restart", g.rig+"/"+name).CombinedOutput(); err != nil {
		return fmt.Sprintf("gt session restart failed: %v %s", err, out)
	}
	g.ready(t, name)
	res := "new session"
	if g.panePID(t, name) == before {
		res = "the same pane process"
	}
	return res + g.kept(t, name, box)
}

// kept says, after a session cycle, whether the polecat's sandbox (the
// container it had, box) and its uncommitted work are still there, and
// how gt polecat list shows it.
func (g *gasTown) kept(t *testing.T, name, box string) string {
	res := ""
	if name == g.box {
		if id := g.boxes.id(name); id != box {
			res += "; a new container"
		}
		eventually(t, 10*time.Second, "hostd in the session's GT_PROCESS_NAMES", func() bool {
			return strings.Contains(g.tmux(t, "show-environment", "-t", session(name), "GT_PROCESS_NAMES"), "hostd")
		})
	}
	if g.hasWIP(name) {
		res += "; uncommitted work kept"
	} else {
		res += "; uncommitted work lost"
	}
	return res + "; listed " + g.listed(t, name)
}

// killed ends the polecat's sandbox under its session the runtime's way
// (docker kill; its pod deleted, which the cluster runs again), with
// uncommitted work in its clone, waits for Gas Town's pane to lose the
// session, restarts the session as the Witness does (gt session
// restart) and says what the next session found.
func (g *gasTown) killed(t *testing.T, name string) string {
	g.wip(t, name, false)
	defer g.wip(t, name, true)
	before := g.panePID(t, name)
	if err := g.boxes.kill(name); err != nil {
		return err.Error()
	}
	if out, err := g.Gt("session", "restart", g.rig+"/"+name).CombinedOutput(); err != nil {
		return fmt.Sprintf("gt session restart failed: %v %s", err, out)
	}
	g.ready(t, name)
	res := "sandbox back"
	if g.panePID(t, name) == before {
		res = "the same pane process"
	}
	return res + g.kept(t, name, g.boxes.id(name))
}

// cycle runs gt handoff --cycle as the polecat's agent (Claude's
// PreCompact hook does) and says whether the host pane was respawned with
// the agent back, the sandbox and the uncommitted work kept.
func (g *gasTown) cycle(t *testing.T, name string) string {
	g.wip(t, name, false)
	defer g.wip(t, name, true)
	before, box := g.panePID(t, name), g.boxes.id(name)
	o := g.run(t, name == g.host, "gt", "handoff", "--cycle", "-s", "context cycle")
	res := fmt.Sprintf("exit %d", o.code)
	respawned := false
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline) && !respawned; time.Sleep(200 * time.Millisecond) {
		respawned = g.panePID(t, name) != before
	}
	if !respawned {
		t.Logf("gt handoff --cycle as %s:\n%s", name, o.out)
		return res + "; no respawn"
	}
	g.ready(t, name)
	return res + "; pane respawned, agent back" + g.kept(t, name, box)
}

// doneResult is what gt done left: the commit's author on origin, the
// merge request's id and gt done's output.
type doneResult struct{ author, mr, out string }

// done commits a change as the polecat's agent, in its working copy (the
// container's pushes its branch to hostd first), and runs gt done there.
// It returns what happened and what gt done left.
func (g *gasTown) done(t *testing.T, name string) (res string, d doneResult) {
	commit := "echo work > work.txt && git add work.txt && git commit -q -m 'the work'"
	if name == g.box {
		commit += " && git push -q origin HEAD"
	}
	if o := g.run(t, name == g.host, "sh", "-c", commit); o.code != 0 {
		return fmt.Sprintf("commit failed: exit %d %s", o.code, o.out), d
	}
	o := g.run(t, name == g.host, "gt", "done")
	res, d.out = fmt.Sprintf("exit %d", o.code), o.out
	if m := regexp.MustCompile(`MR ID: (\S+)`).FindStringSubmatch(o.out); m != nil && strings.Contains(o.out, "Work submitted to merge queue") {
		res, d.mr = res+"; merge request filed", m[1]
	} else {
		t.Logf("gt done as %s:\n%s", name, o.out)
		res += "; no merge request"
	}
	out, _ := exec.Command("git", "--git-dir", g.Origin, "log", "-1", "--format=%s by %an <%ae>", "--branches=polecat/"+name+"*").Output()
	landed := strings.TrimSpace(string(out))
	if !strings.HasPrefix(landed, "the work by ") {
		return res + "; the commit not on origin", d
	}
	d.author = strings.ReplaceAll(strings.TrimPrefix(landed, "the work by "), name, "NAME")
	return res + "; the commit on origin", d
}

// reuse slings the next bead to the rig while the polecat is idle after
// gt done, with the rig's exec wrapper set for the container polecat and
// not for the host one: Gas Town reuses the polecat (a new branch in its
// worktree; the container polecat's sandbox stays). Its agent then
// commits and runs gt done. It says where the work went: a new merge
// request for the new bead, on the new branch, the first one's branch on
// origin untouched.
func (g *gasTown) reuse(t *testing.T, name, firstMR string) string {
	g.rigSettings(t, func(s map[string]any) {
		rt := s["runtime"].(map[string]any)
		if name == g.box {
			rt["exec_wrapper"] = []string{"hostd", "run", "--"}
		} else {
			delete(rt, "exec_wrapper")
		}
	})
	// Gas Town reuses a polecat whose session is gone, with no hooked or
	// open bead (loadFromBeads): gt done leaves the session at its prompt,
	// so the session is stopped as the Witness or the operator does.
	if out, err := g.Gt("session", "stop", g.rig+"/"+name).CombinedOutput(); err != nil {
		t.Fatalf("gt session stop %s: %v %s", name, err, out)
	}
	eventually(t, 30*time.Second, name+" listed idle", func() bool { return g.listed(t, name) == "idle" })
	before := g.originBranches(t, name)
	got, bead := g.sling(t)
	if got != name {
		t.Fatalf("gt sling gave %s the next bead, want %s (Gas Town reuses the first idle polecat by name)", got, name)
	}
	g.ready(t, name)
	res := "reused"
	want := strings.TrimSpace(g.git(t, g.worktree(name), "branch", "--show-current"))
	on := want
	if name == g.box {
		out, err := output(g.boxes, name, "git", "-C", "/work/"+g.rig, "branch", "--show-current")
		if err != nil {
			t.Fatalf("the branch of %s's clone: %v %s", name, err, out)
		}
		on = strings.TrimSpace(out)
	}
	if on == want {
		res += "; on its new branch"
	} else {
		res += "; on " + on + ", not on its worktree's " + want
	}
	done, d := g.done(t, name)
	res += "; " + done
	switch {
	case d.mr == "":
	case d.mr == firstMR:
		res += "; the first merge request again"
	case !strings.Contains(d.out, bead):
		t.Logf("gt done as %s:\n%s", name, d.out)
		res += "; a new merge request, not for " + bead
	default:
		res += "; a new merge request for the new bead"
	}
	after := g.originBranches(t, name)
	for ref, sha := range before {
		if after[ref] != sha {
			res += "; " + ref + " moved on origin"
		}
	}
	if len(after) <= len(before) {
		res += "; no new branch on origin"
	}
	return res
}

// originBranches is the polecat's branches on the rig's origin, by name,
// with their commits.
func (g *gasTown) originBranches(t *testing.T, name string) map[string]string {
	refs := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(g.git(t, "", "--git-dir", g.Origin, "for-each-ref", "--format=%(refname:short) %(objectname)", "refs/heads/polecat/"+name, "refs/heads/polecat/"+name+"-*")), "\n") {
		if ref, sha, ok := strings.Cut(line, " "); ok {
			refs[ref] = sha
		}
	}
	return refs
}

// git runs git (in dir when given) on the host.
func (g *gasTown) git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	if dir != "" {
		args = append([]string{"-C", dir}, args...)
	}
	out, err := exec.Command("git", args...).Output()
	if err != nil {
		t.Fatalf("git %s: %v", strings.Join(args, " "), err)
	}
	return string(out)
}

// nuke removes the polecat as Gas Town does; for the container polecat
// hostd serve then removes its sandbox and revokes it.
// nukedInBox is what a nuke does besides Gas Town's for a polecat in a
// sandbox.
const nukedInBox = "; sandbox removed, certificate revoked, hostd's state of it forgotten"

func (g *gasTown) nuke(t *testing.T, name string) string {
	out, err := g.Gt("polecat", "nuke", g.rig+"/"+name, "--force").CombinedOutput()
	if err != nil {
		return fmt.Sprintf("gt polecat nuke failed: %v %s", err, out)
	}
	res := "exit 0"
	if _, err := os.Stat(filepath.Join(g.Dir, g.rig, "polecats", name)); err == nil {
		res += "; directory kept"
	} else {
		res += "; directory removed"
	}
	if name == g.box {
		eventually(t, 60*time.Second, "the sandbox removed", func() bool { gone, _ := g.boxes.gone(name); return gone })
		g.r.wait(10*time.Second, name+" forgotten", func(st api.Status) bool {
			return !slices.ContainsFunc(st.Polecats, func(p api.Polecat) bool { return p.Name == name })
		})
		base := state.For(g.Dir).PolecatData(wire.Identity{Rig: g.rig, Name: name})
		eventually(t, 10*time.Second, "hostd's data base of "+name+" removed", func() bool {
			_, err := os.Lstat(base)
			return errors.Is(err, fs.ErrNotExist)
		})
		if !strings.Contains(g.r.town.Run("cert", "list"), "revoked") {
			t.Errorf("%s's certificate is not revoked", name)
		}
		res += nukedInBox
	}
	return res
}
