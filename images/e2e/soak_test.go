//go:build e2e && soak

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/polecat-sidecar/sidecar/hostd/api"
	harness "github.com/polecat-sidecar/sidecar/hostd/e2e"
	"github.com/polecat-sidecar/sidecar/hostd/state"
	"github.com/polecat-sidecar/sidecar/images/soak/history"
	"github.com/polecat-sidecar/sidecar/images/soak/history/invariant"
	"github.com/polecat-sidecar/sidecar/tunnel/tunneltest"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// The soak: one hostd, SOAK_AGENTS agents as processes on the host (each
// through its own userspace relay, so its UDP can be blocked and its path
// cut alone) and SOAK_CONTAINERS polecat containers from the e2e image,
// each doing a randomised mix of Gas Town's work for SOAK_DURATION while a
// chaos loop overlaps faults. Every operation, fault, observation and
// resource sample goes into a history (images/soak/history) that the
// checker (images/soak/history/invariant) reads at the end; the run fails
// on any violated invariant. SOAK_SEED reproduces a run's schedule of
// operations and faults.

// soakConfig is the run's scale, from the environment.
type soakConfig struct {
	duration   time.Duration
	agents     int
	containers int
	seed       uint64
	out        string // history.jsonl, summary.txt, resources.svg
}

func soakSettings(t *testing.T) soakConfig {
	c := soakConfig{duration: 10 * time.Minute, agents: 50, containers: 3, seed: rand.Uint64() >> 1}
	if v := os.Getenv("SOAK_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			t.Fatalf("SOAK_DURATION=%q: want a duration such as 60s or 10m", v)
		}
		c.duration = d
	}
	for env, p := range map[string]*int{"SOAK_AGENTS": &c.agents, "SOAK_CONTAINERS": &c.containers} {
		if v := os.Getenv(env); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 || n > 2000 {
				t.Fatalf("%s=%q: want a number from 0 to 2000", env, v)
			}
			*p = n
		}
	}
	if c.containers > len(polecatNames) {
		t.Fatalf("SOAK_CONTAINERS=%d: at most %d", c.containers, len(polecatNames))
	}
	if v := os.Getenv("SOAK_SEED"); v != "" {
		s, err := strconv.ParseUint(v, 10, 63)
		if err != nil {
			t.Fatalf("SOAK_SEED=%q: want a number", v)
		}
		c.seed = s
	}
	c.out = os.Getenv("SOAK_OUT")
	if c.out == "" {
		c.out = filepath.Join(os.TempDir(), fmt.Sprintf("soak-%d", c.seed))
	}
	if err := os.MkdirAll(c.out, 0o755); err != nil {
		t.Fatal(err)
	}
	return c
}

// Recovery bounds: how long after a fault ends its agents must be back.
// The agents reconnect with a backoff of at most 10 s; hostd notices a
// silent tunnel after its idle timeout (8 s here).
const (
	boundProcess   = 30 * time.Second
	boundHostd     = 45 * time.Second
	boundContainer = 60 * time.Second
	// detectDown is how soon hostd status must show an agent that went
	// silent as down: its idle timeout (8 s) and the 1 s hostd's silence
	// watch may add, a status sample (2 s), and 3 s of slack for a loaded
	// machine. On TCP a ping every 4 s waits up to 8 s for its answer:
	// 12 s and the sample, no slack.
	detectDown = 14 * time.Second
)

// soak is one run.
type soak struct {
	t    *testing.T
	cfg  soakConfig
	r    *rig
	h    *history.Writer
	api  *api.Client
	self string // this binary: the pane program

	seq     atomic.Int64 // operation and fault ids
	mu      sync.Mutex   // guards the three below
	hostds  []*harness.Proc
	nudged  map[string]string // op -> hostd's id, for each nudge hostd accepted
	pushed  map[string]string // commit -> branch, for each push the client saw succeed
	hostdMu sync.Mutex        // one hostd fault at a time

	agents   []*soakAgent
	clockBin string // gt-agent-clock, for the process agents whose clock is stepped; "" where it cannot be built
}

// relayTmp is name in the temporary directory hostd gives polecat
// gastown/<polecat>'s relayed commands (TMPDIR), the one place outside
// the polecat's own directory they may write.
func relayTmp(town, polecat, name string) string {
	return filepath.Join(state.For(town).RelayTemp(wire.Identity{Rig: "gastown", Name: polecat}), name)
}

// soakAgent is one polecat under load.
type soakAgent struct {
	name      string
	id        wire.Identity
	container bool
	relay     *tunneltest.Relay // process agents: the path to hostd
	env, args []string          // process agents: how to start it again
	sock      string            // process agents: GT_AGENT_SOCKET
	clone     string            // process agents: its clone of the rig
	gitURL    string            // process agents: the rig through its agent
	dataRoot  string            // where the agent keeps its data: a directory here, or /work in a container
	hostData  string            // the polecat's data on the host: <town>/gastown/polecats/<name>
	ran       string            // where the stand-in gt records each of its relayed ops: the temporary directory hostd gives the polecat
	paneLog   string
	busy      string
	clock     *clock // process agents: its wall clock's offset (nil: the real clock)
	bin       string // process agents: gt-agent, or gt-agent-clock with a clock

	mu     sync.Mutex // guards the fields below and faults on this agent
	proc   *harness.Proc
	killed bool // SIGKILLed, not restarted yet
	frozen bool // SIGSTOPped
}

// TestSoak runs the soak (make soak, make soak-quick).
func TestSoak(t *testing.T) {
	cfg := soakSettings(t)
	t.Logf("soak: seed %d (SOAK_SEED=%d reproduces the schedule), %v, %d agents + %d containers, output in %s",
		cfg.seed, cfg.seed, cfg.duration, cfg.agents, cfg.containers, cfg.out)
	h, err := history.Create(filepath.Join(cfg.out, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	s := &soak{t: t, cfg: cfg, h: h, nudged: map[string]string{}, pushed: map[string]string{}}
	if s.self, err = os.Executable(); err != nil {
		t.Fatal(err)
	}
	h.Add(history.Event{Kind: "run", Phase: "start", Seed: int64(cfg.seed)})
	defer func() {
		if t.Failed() {
			t.Logf("soak: seed %d; history %s", cfg.seed, filepath.Join(cfg.out, "history.jsonl"))
		}
	}()

	s.r = newNetwork(t)
	s.r.git = harness.SeedGitTown(t)
	s.r.town = s.r.git.Town
	s.r.serve = []string{"--server-name", s.r.gateway, "--relay-gt", s.r.fakeGT, "--relay-bd", s.r.fakeGT,
		"--beat-interval", "5s", "--stale-beats", "3", "--idle-timeout", "8s", "--grace", "30s",
		"--metrics-listen", s.r.metrics, "--sandbox-reap", "0", "--nudge-ttl", "2m", "--log-format", "json"}
	s.api = s.r.town.Client()
	if err := s.startHostd(); err != nil {
		t.Fatal(err)
	}
	s.clockBin = buildClockAgent(t)
	s.startAgents()

	ctx, stopSampling := context.WithCancel(context.Background())
	var samplers sync.WaitGroup
	samplers.Add(1)
	go func() { defer samplers.Done(); every(ctx, 2*time.Second, func() { s.sampleStatus(ctx) }) }()
	for range 3 {
		s.sample("baseline")
		time.Sleep(time.Second)
	}
	s.goroutines("baseline")
	samplers.Add(1)
	go func() { defer samplers.Done(); every(ctx, 5*time.Second, func() { s.sample("load") }) }()

	started := s.h.Now()
	load, stopLoad := context.WithTimeout(context.Background(), cfg.duration)
	var workers sync.WaitGroup
	for i, a := range s.agents {
		workers.Add(1)
		go func() { defer workers.Done(); s.work(load, a, rand.New(rand.NewPCG(cfg.seed, uint64(i)))) }()
	}
	workers.Add(2)
	for c := range 2 {
		go func() { defer workers.Done(); s.chaos(load, rand.New(rand.NewPCG(cfg.seed, uint64(1_000_000+c)))) }()
	}
	samplers.Add(1)
	go func() {
		defer samplers.Done()
		every(load, min(safetyEvery, cfg.duration/4), func() { s.safety(stopLoad) })
	}()
	workers.Wait()
	stopLoad()
	t.Logf("soak: load and faults stopped after %v, %d operations and faults", s.h.Now().Sub(started), s.seq.Load())

	s.heal()
	s.waitAllBack(2 * time.Minute)
	s.drainNudges(3 * time.Minute)
	time.Sleep(15 * time.Second) // let hostd settle before the last samples
	for range 3 {
		s.sample("after")
		time.Sleep(time.Second)
	}
	s.goroutines("after")
	stopSampling()
	samplers.Wait()
	s.observe()
	h.Add(history.Event{Kind: "run", Phase: "end"})
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	s.check()
}

// startHostd starts hostd (again) and keeps its process for its log. On a
// loaded machine a restarted hostd may take more than the e2e suite's 5 s
// to answer: it gets a minute. The fault's end is stamped before the
// start, so its recovery bound counts hostd's own start too.
func (s *soak) startHostd() error {
	err := s.r.launchHostd(time.Minute)
	s.mu.Lock()
	s.hostds = append(s.hostds, s.r.hostd)
	s.mu.Unlock()
	if err != nil {
		return fmt.Errorf("starting hostd: %w", err)
	}
	return nil
}

// startAgents starts the process agents, each through its own relay, and
// the containers.
func (s *soak) startAgents() {
	t := s.t
	for i := range s.cfg.agents {
		name := fmt.Sprintf("soak%03d", i)
		dir := t.TempDir()
		a := &soakAgent{name: name, id: wire.Identity{Rig: "gastown", Name: name}, relay: tunneltest.NewRelay(t, s.r.addr),
			sock: filepath.Join(dir, "agent.sock"), paneLog: filepath.Join(dir, "pane.log"), busy: filepath.Join(dir, "busy")}
		gitAddr := tunneltest.FreeAddr(t)
		a.dataRoot, a.hostData = filepath.Join(dir, "data"), filepath.Join(s.r.town.Dir, "gastown", "polecats", name)
		a.ran = relayTmp(s.r.town.Dir, name, "ran")
		a.env = append(harness.AgentEnv(a.relay.Addr, s.r.town.Issue("gastown/"+name, 48*time.Hour)),
			"GT_AGENT_SOCKET="+a.sock, "GT_AGENT_BEAT_INTERVAL=5s", "GT_AGENT_QUIC_PROBE=2s", "GT_AGENT_DATA_ROOT="+a.dataRoot)
		a.args = []string{"up", "--tmux-socket", harness.TmuxSocket(t), "--state-dir", filepath.Join(dir, "state"),
			"--git-listen", gitAddr, "--idle-timeout", "8s", "--sync-checkpoint", "-1s",
			"--", "env", harness.PaneEnv + "=claude", harness.PaneLogEnv + "=" + a.paneLog, harness.PaneBusyEnv + "=" + a.busy, s.self}
		a.bin = "gt-agent"
		if s.clockBin != "" && i%2 == 0 { // half of them: the others run the gt-agent that ships
			a.bin, a.clock = s.clockBin, newClock(t, filepath.Join(dir, "clock"))
			a.env = append(a.env, a.clock.env())
		}
		a.proc = harness.Start(t, a.env, a.bin, a.args...)
		a.clone = filepath.Join(dir, "clone")
		a.gitURL = "http://" + gitAddr + "/v1/git/gastown"
		s.agents = append(s.agents, a)
	}
	for _, name := range polecatNames[:s.cfg.containers] {
		a := &soakAgent{name: name, id: wire.Identity{Rig: "gastown", Name: name}, container: true, paneLog: "/tmp/pane.log", busy: "/tmp/busy",
			dataRoot: "/work", hostData: filepath.Join(s.r.town.Dir, "gastown", "polecats", name), ran: relayTmp(s.r.town.Dir, name, "ran")}
		// The containers' host data on a small filesystem of its own, for
		// the disk-full fault.
		if err := os.MkdirAll(a.hostData, 0o755); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=8m", "soak-"+name, a.hostData).CombinedOutput(); err != nil {
			t.Fatalf("mounting a small filesystem on %s: %v %s", a.hostData, err, out)
		}
		undo.push(func() { _ = exec.Command("umount", "-l", a.hostData).Run() })
		t.Cleanup(func() { _ = exec.Command("umount", "-l", a.hostData).Run() })
		s.r.startPolecat(name)
		s.agents = append(s.agents, a)
	}
	s.waitAllBack(3 * time.Minute)
	// Each agent's clone of the rig, through its agent, four at a time;
	// a container's is inside it (containerClone).
	sem, errs := make(chan struct{}, 4), make(chan error, len(s.agents))
	for _, a := range s.agents {
		sem <- struct{}{}
		go func() {
			defer func() { <-sem }()
			if a.container {
				out, err := s.r.exec(a.name, "", "sh", "-c", "git clone -q http://127.0.0.1:9878/v1/git/gastown "+containerClone+
					" && cd "+containerClone+" && git checkout -q -b polecat/"+a.name+"-soak")
				if err != nil {
					err = fmt.Errorf("cloning the rig in %s's container: %v: %s", a.name, err, out)
				}
				errs <- err
				return
			}
			out, err := s.r.git.TryGit(filepath.Dir(a.clone), "clone", "-q", a.gitURL, a.clone)
			if err == nil {
				out, err = s.r.git.TryGit(a.clone, "checkout", "-q", "-b", "polecat/"+a.name+"-soak")
			}
			if err != nil {
				err = fmt.Errorf("cloning the rig through %s's agent: %v: %s", a.name, err, out)
			}
			errs <- err
		}()
	}
	for range cap(sem) {
		sem <- struct{}{}
	}
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}

// waitAllBack waits until hostd shows every agent connected.
func (s *soak) waitAllBack(d time.Duration) {
	s.t.Helper()
	var missing []string
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
		st, err := s.api.Status(context.Background())
		if err != nil {
			continue
		}
		up := map[string]bool{}
		for _, p := range st.Polecats {
			up[p.Name] = p.Connected
		}
		missing = missing[:0]
		for _, a := range s.agents {
			if !up[a.name] {
				missing = append(missing, a.name)
			}
		}
		if len(missing) == 0 {
			return
		}
	}
	// A failure of the run, not its end: the history is still checked
	// (the recovery invariant names what never came back), and the
	// missing agents' own logs are kept beside it.
	s.t.Errorf("soak: not connected within %v: %v (their logs: %s/<name>.log)", d, missing, s.cfg.out)
	for _, a := range s.agents {
		if !slices.Contains(missing, a.name) {
			continue
		}
		var log string
		if a.container {
			log, _ = tryDocker("logs", s.r.container(a.name))
		} else {
			a.mu.Lock()
			if a.proc != nil {
				log = a.proc.Output()
			}
			a.mu.Unlock()
		}
		_ = os.WriteFile(filepath.Join(s.cfg.out, a.name+".log"), []byte(log), 0o644)
	}
}

// op records one operation: its invocation, then its outcome.
func (s *soak) op(kind string, a *soakAgent, base history.Event, f func(opID string) (history.Event, error)) {
	id := base.Op
	if id == "" {
		id = s.opID(kind, a)
	}
	base.Kind, base.Phase, base.Agent, base.Op = kind, "invoke", a.id.String(), id
	s.h.Add(base)
	res, err := f(id)
	res.Kind, res.Agent, res.Op, res.Phase = kind, a.id.String(), id, "ok"
	if err != nil {
		res.Phase, res.Err = "fail", err.Error()
	}
	s.h.Add(res)
	s.mu.Lock()
	switch {
	case err != nil:
	case kind == "nudge":
		s.nudged[id] = res.NudgeID
	case kind == "push":
		s.pushed[res.Commit] = res.Branch
	}
	s.mu.Unlock()
}

// opID is a new operation id.
func (s *soak) opID(kind string, a *soakAgent) string {
	return fmt.Sprintf("%s-%s-%d", kind, a.name, s.seq.Add(1))
}

// work is one agent's load until ctx ends: relayed commands, pushes,
// nudges (wait-idle and immediate) while its pane goes busy and idle,
// peeks.
func (s *soak) work(ctx context.Context, a *soakAgent, rng *rand.Rand) {
	for ctx.Err() == nil {
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Duration(500+rng.IntN(2500)) * time.Millisecond):
		}
		switch p := rng.IntN(100); {
		case p < 40:
			s.op("relay", a, history.Event{}, func(opID string) (history.Event, error) { return history.Event{}, s.relayed(ctx, a, opID) })
		case p < 55:
			s.push(a)
		case p < 75:
			mode := wire.NudgeWaitIdle
			if rng.IntN(2) == 0 {
				mode = wire.NudgeImmediate
			}
			s.nudge(a, mode)
		case p < 80:
			s.setBusy(a, rng.IntN(2) == 0)
		case p < 88:
			side := "host"
			if rng.IntN(2) == 0 {
				side = "container"
			}
			s.dataWrite(a, side, fmt.Sprintf("results/soak-%d.txt", rng.IntN(4)))
		case p < 92:
			s.syncOp(a, rng.IntN(2) == 0)
		default:
			s.op("peek", a, history.Event{}, func(string) (history.Event, error) {
				pctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				var out strings.Builder
				return history.Event{}, s.api.Peek(pctx, api.Identity(a.id), 20, false, &out)
			})
		}
	}
}

// brief is a command's output on one line, its last 300 bytes: what the
// history keeps of a failure.
func brief(out string) string {
	out = strings.Join(strings.Fields(out), " ")
	if len(out) > 300 {
		out = "..." + out[len(out)-300:]
	}
	return out
}

// relayed runs gt nudge through the agent; the stand-in gt records opID.
func (s *soak) relayed(ctx context.Context, a *soakAgent, opID string) error {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 60*time.Second)
	defer cancel()
	var cmd *exec.Cmd
	if a.container {
		cmd = exec.CommandContext(cctx, "docker", "exec", s.r.container(a.name), "gt", "nudge", "log", opID)
	} else {
		cmd = exec.CommandContext(cctx, filepath.Join(harness.BinDir, "gt"), "nudge", "log", opID, a.ran)
		cmd.Env = append(os.Environ(), "GT_AGENT_SOCKET="+a.sock)
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%v: %s", err, brief(string(out)))
	}
	return nil
}

// containerClone is where a container's clone of the rig is.
const containerClone = "/home/polecat/soak-repo"

// push commits in the agent's clone and pushes its branch through its
// agent.
func (s *soak) push(a *soakAgent) {
	if a.container {
		s.containerPush(a)
		return
	}
	g := s.r.git
	if _, err := os.Stat(a.clone); err != nil {
		return // not cloned yet
	}
	_ = os.WriteFile(filepath.Join(a.clone, "soak.txt"), []byte(fmt.Sprintf("%d\n", time.Now().UnixNano())), 0o644)
	if out, err := g.TryGit(a.clone, "commit", "-q", "-am", "soak", "--allow-empty"); err != nil {
		s.t.Logf("soak: committing in %s: %v %s", a.name, err, out)
		return
	}
	commit, _ := g.TryGit(a.clone, "rev-parse", "HEAD")
	branch := "polecat/" + a.name + "-soak"
	s.op("push", a, history.Event{Branch: branch, Commit: strings.TrimSpace(commit)}, func(string) (history.Event, error) {
		cmd := exec.Command("timeout", "90", "git", "push", "-q", "origin", "HEAD:refs/heads/"+branch)
		cmd.Dir, cmd.Env = a.clone, harness.GitEnv(g.Home)
		if out, err := cmd.CombinedOutput(); err != nil {
			return history.Event{}, fmt.Errorf("%v: %s", err, brief(string(out)))
		}
		return history.Event{Branch: branch, Commit: strings.TrimSpace(commit)}, nil
	})
}

// containerPush is push in a container: git there commits, and pushes
// through the container's gt-agent.
func (s *soak) containerPush(a *soakAgent) {
	// A commit a container restart killed leaves its lock behind.
	out, err := s.r.exec(a.name, "", "sh", "-c", "cd "+containerClone+" && rm -f .git/index.lock && date +%s%N > soak.txt && git add soak.txt"+
		" && git -c user.name="+a.name+" -c user.email="+a.name+"@gastown commit -q -m soak && git rev-parse HEAD")
	if err != nil {
		return // no commit to push: the container is paused, restarting or cut off
	}
	commit, branch := lastLine(out), "polecat/"+a.name+"-soak"
	s.op("push", a, history.Event{Branch: branch, Commit: commit}, func(string) (history.Event, error) {
		out, err := s.r.exec(a.name, "", "timeout", "90", "git", "-C", containerClone, "push", "-q", "origin", "HEAD:refs/heads/"+branch)
		if err != nil {
			return history.Event{}, fmt.Errorf("%v: %s", err, brief(out))
		}
		return history.Event{Branch: branch, Commit: commit}, nil
	})
}

// nudge asks hostd to nudge the agent, answered once the nudge is stored;
// its text carries the op's id, so the pane's log says which it was.
func (s *soak) nudge(a *soakAgent, mode string) {
	s.op("nudge", a, history.Event{Mode: mode}, func(opID string) (history.Event, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		o, err := s.api.Nudge(ctx, api.Identity(a.id), api.NudgeRequest{Text: "soak " + opID, Mode: mode})
		if err != nil {
			return history.Event{}, err
		}
		return history.Event{NudgeID: o.ID, Mode: mode}, nil
	})
}

// dataWrite appends a line naming the op to path on one side: the host's
// copy of the polecat's data or the agent's. Appends never remove a line,
// so every write's line must survive, merged or in a conflict copy.
func (s *soak) dataWrite(a *soakAgent, side, path string) {
	id := s.opID("data", a)
	s.op("data", a, history.Event{Op: id, Side: side, Path: path, Hash: id}, func(opID string) (history.Event, error) {
		e := history.Event{Side: side, Path: path, Hash: opID}
		var err error
		switch {
		case side == "host":
			err = appendLine(filepath.Join(a.hostData, path), opID)
		case a.container:
			var out string
			out, err = tryDocker("exec", s.r.container(a.name), "sh", "-c", `mkdir -p "$(dirname "$1")" && printf '%s\n' "$2" >> "$1"`, "sh", a.dataRoot+"/"+path, opID)
			if err != nil {
				err = fmt.Errorf("%v: %s", err, brief(out))
			}
		default:
			err = appendLine(filepath.Join(a.dataRoot, path), opID)
		}
		return e, err
	})
}

// appendLine appends line to the file at path, making its directory.
func appendLine(path, line string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	_, err = f.WriteString(line + "\n")
	return errors.Join(err, f.Close())
}

// syncOp pulls the polecat's data to the host (merging) or pushes the
// host's to it.
func (s *soak) syncOp(a *soakAgent, pull bool) {
	kind := "sync-push"
	if pull {
		kind = "sync-pull"
	}
	s.op(kind, a, history.Event{}, func(string) (history.Event, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		var err error
		if pull {
			_, err = s.api.SyncPull(ctx, api.Identity(a.id), api.PullOptions{}, nil)
		} else {
			_, err = s.api.SyncPush(ctx, api.Identity(a.id), nil)
		}
		return history.Event{}, err
	})
}

// setBusy makes the agent's pane show Claude Code's spinner, or not.
func (s *soak) setBusy(a *soakAgent, busy bool) {
	switch {
	case a.container && busy:
		_, _ = tryDocker("exec", s.r.container(a.name), "touch", a.busy)
	case a.container:
		_, _ = tryDocker("exec", s.r.container(a.name), "rm", "-f", a.busy)
	case busy:
		_ = os.WriteFile(a.busy, nil, 0o644)
	default:
		_ = os.Remove(a.busy)
	}
}

// fault is one kind of fault the chaos loop injects.
type fault struct {
	kind      string
	container bool // on a container (else a process agent, or hostd)
	hostd     bool
	bound     time.Duration                              // back within this after the end
	detect    time.Duration                              // shown down within this after the start (0: the fault implies no down state)
	start     func(s *soak, a *soakAgent, r uint64) bool // false: not applicable now; r is the chaos loop's random number for it
	// end undoes the fault. An error means it is not undone, unless it
	// is a workedAround: the machine failed and the harness got past it.
	end func(s *soak, a *soakAgent) error
}

// workedAround is an undoing the machine failed and the harness completed
// another way: the fault did end, when end returned (the end's Done), and
// the error is the machine's, recorded on the fault's end.
type workedAround struct{ error }

// unpause undoes a container pause, thawing the container through its
// freezer when docker unpause fails or hangs.
func (s *soak) unpause(a *soakAgent) error {
	out, err := tryDockerWithin(20*time.Second, "unpause", s.r.container(a.name))
	if err == nil || strings.Contains(out, "not paused") { // "is not paused", or runc's "container not paused" after a thaw
		return nil
	}
	derr := fmt.Errorf("docker unpause: %v: %s", err, strings.TrimSpace(out))
	if terr := s.r.thaw(a.name); terr != nil {
		return errors.Join(derr, terr)
	}
	return workedAround{fmt.Errorf("%w; thawed through the freezer", derr)}
}

var faults = []fault{
	{kind: "hostd-kill9", hostd: true, bound: boundHostd,
		start: func(s *soak, _ *soakAgent, _ uint64) bool {
			_ = s.r.hostd.Cmd.Process.Signal(syscall.SIGKILL)
			if err := s.r.hostd.Wait(10 * time.Second); errors.Is(err, harness.ErrRunning) {
				s.t.Errorf("soak: hostd after SIGKILL: %v", err)
			}
			return true
		},
		end: func(s *soak, _ *soakAgent) error {
			if err := s.startHostd(); err != nil {
				s.t.Errorf("soak: %v", err)
			}
			return nil
		}},
	{kind: "agent-sigkill", bound: boundProcess, detect: detectDown,
		start: func(_ *soak, a *soakAgent, _ uint64) bool {
			if a.killed || a.frozen {
				return false
			}
			_ = a.proc.Cmd.Process.Signal(syscall.SIGKILL)
			a.killed = true
			return true
		},
		end: func(s *soak, a *soakAgent) error {
			if err := a.proc.Wait(10 * time.Second); errors.Is(err, harness.ErrRunning) {
				s.t.Errorf("soak: %s after SIGKILL: %v", a.name, err)
			}
			a.proc = harness.Start(s.t, a.env, a.bin, a.args...) // adopts its tmux session
			a.killed = false
			return nil
		}},
	{kind: "agent-sigstop", bound: boundProcess, detect: detectDown,
		start: func(_ *soak, a *soakAgent, _ uint64) bool {
			if a.killed || a.frozen {
				return false
			}
			a.frozen = a.proc.Cmd.Process.Signal(syscall.SIGSTOP) == nil
			return a.frozen
		},
		end: func(_ *soak, a *soakAgent) error {
			a.frozen = false
			return a.proc.Cmd.Process.Signal(syscall.SIGCONT)
		}},
	{kind: "udp-block", bound: boundProcess,
		start: func(_ *soak, a *soakAgent, _ uint64) bool { a.relay.BlockUDP(true); return true },
		end:   func(_ *soak, a *soakAgent) error { a.relay.BlockUDP(false); return nil }},
	{kind: "tcp-cut", bound: boundProcess, detect: detectDown,
		start: func(_ *soak, a *soakAgent, _ uint64) bool { a.relay.Cut(true); return true },
		end:   func(_ *soak, a *soakAgent) error { a.relay.Cut(false); return nil }},
	// The agent's wall clock alone is stepped (soakclock_test.go), behind
	// or ahead; hostd's is not. The agent must stay connected, or be back
	// within the bound, and no invariant may break while its clock is off.
	{kind: history.FaultClockStep, bound: boundProcess,
		start: func(_ *soak, a *soakAgent, r uint64) bool {
			if a.clock == nil {
				return false
			}
			a.clock.step(clockStep(r))
			return true
		},
		end: func(_ *soak, a *soakAgent) error { a.clock.step(0); return nil }},
	{kind: "container-pause", container: true, bound: boundContainer, detect: detectDown,
		start: func(s *soak, a *soakAgent, _ uint64) bool {
			_, err := tryDocker("pause", s.r.container(a.name))
			return err == nil
		},
		end: func(s *soak, a *soakAgent) error { return s.unpause(a) }},
	{kind: "container-restart", container: true, bound: boundContainer,
		start: func(s *soak, a *soakAgent, _ uint64) bool {
			_, err := tryDocker("restart", "-t", "2", s.r.container(a.name))
			return err == nil
		},
		end: func(*soak, *soakAgent) error { return nil }},
	{kind: "container-disconnect", container: true, bound: boundContainer, detect: detectDown,
		start: func(s *soak, a *soakAgent, _ uint64) bool {
			_, err := tryDocker("network", "disconnect", s.r.net, s.r.container(a.name))
			return err == nil
		},
		end: func(s *soak, a *soakAgent) error {
			if out, err := tryDocker("network", "connect", s.r.net, s.r.container(a.name)); err != nil {
				return fmt.Errorf("docker network connect: %v: %s", err, strings.TrimSpace(out))
			}
			return nil
		}},
	{kind: "disk-full", container: true, bound: boundContainer,
		start: func(_ *soak, a *soakAgent, _ uint64) bool {
			return fill(filepath.Join(a.hostData, ".soak-filler")) == nil
		},
		end: func(_ *soak, a *soakAgent) error { return os.Remove(filepath.Join(a.hostData, ".soak-filler")) }},
}

// fill writes path until its filesystem is full.
func fill(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	for {
		if _, err := f.Write(buf); err != nil {
			if errors.Is(err, syscall.ENOSPC) {
				return nil
			}
			return err
		}
	}
}

// activeFault is a fault started and not yet ended.
type activeFault struct {
	f  fault
	a  *soakAgent // nil for hostd
	r  uint64     // the fault's own random number (a clock step's size)
	op string
}

// chaos starts a random fault on a random target every few seconds,
// holds it a random while and ends it, until ctx ends; two loops run at
// once, so faults overlap.
func (s *soak) chaos(ctx context.Context, rng *rand.Rand) {
	for ctx.Err() == nil {
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Duration(3000+rng.IntN(7000)) * time.Millisecond):
		}
		f := faults[rng.IntN(len(faults))]
		var a *soakAgent
		if !f.hostd {
			var pool []*soakAgent
			for _, x := range s.agents {
				if x.container == f.container {
					pool = append(pool, x)
				}
			}
			if len(pool) == 0 {
				continue
			}
			a = pool[rng.IntN(len(pool))]
		}
		hold := time.Duration(2000+rng.IntN(23000)) * time.Millisecond
		s.inject(activeFault{f: f, a: a, r: rng.Uint64()}, hold)
	}
}

// inject runs one fault for hold and records its start and end.
func (s *soak) inject(af activeFault, hold time.Duration) {
	if af.a != nil {
		af.a.mu.Lock()
		defer af.a.mu.Unlock()
	} else {
		s.hostdMu.Lock()
		defer s.hostdMu.Unlock()
	}
	af.op = fmt.Sprintf("fault-%s-%d", af.f.kind, s.seq.Add(1))
	agent := ""
	if af.a != nil {
		agent = af.a.id.String()
	}
	// The fault begins when its injection does (a container's restart
	// can reconnect it before docker restart returns), and is in place
	// when the injection returns.
	began := s.h.Now()
	if !af.f.start(s, af.a, af.r) {
		return
	}
	start := history.Event{T: began, Done: s.h.Now(), Kind: "fault", Phase: "start", Op: af.op, Fault: af.f.kind, Agent: agent,
		Bound: history.Duration(af.f.bound), Detect: history.Duration(af.f.detect)}
	if af.f.kind == history.FaultClockStep {
		start.Step = history.Duration(clockStep(af.r))
	}
	s.h.Add(start)
	time.Sleep(hold)
	// The fault ends when its undoing begins: the recovery bound counts
	// the undoing too (a restarted hostd's start, a container's unpause).
	ended := s.h.Now()
	end := history.Event{T: ended, Kind: "fault", Phase: "end", Op: af.op, Fault: af.f.kind, Agent: agent, Bound: history.Duration(af.f.bound)}
	var wa workedAround
	switch err := af.f.end(s, af.a); {
	case err == nil:
	case errors.As(err, &wa):
		// Held until the harness got past the machine: recovery counts
		// from then, detection only up to when the undoing began.
		end.Done, end.Err = s.h.Now(), err.Error()
		s.t.Logf("soak: %s %s: the machine failed to undo it, worked around: %v", af.op, agent, err)
	default:
		end.Phase, end.Err = history.PhaseFail, err.Error()
		s.t.Errorf("soak: %s %s could not be undone (the machine's failure, not the product's): %v", af.op, agent, err)
	}
	s.h.Add(end)
}

// heal undoes whatever a fault may have left (every fault has ended by
// now; this is for one whose end failed).
func (s *soak) heal() {
	for _, a := range s.agents {
		if a.container {
			if err := s.unpause(a); err != nil {
				s.t.Logf("soak: healing %s: %v", a.name, err)
			}
			_, _ = tryDocker("network", "connect", s.r.net, s.r.container(a.name)) // fails when connected
			continue
		}
		a.relay.BlockUDP(false)
		a.relay.Cut(false)
		if a.clock != nil {
			a.clock.step(0)
		}
		_ = a.proc.Cmd.Process.Signal(syscall.SIGCONT)
	}
}

// drainNudges waits until no agent has a nudge queued.
func (s *soak) drainNudges(d time.Duration) {
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(time.Second) {
		queued := 0
		for _, a := range s.agents {
			items, err := s.api.NudgeList(context.Background(), api.Identity(a.id))
			if err != nil {
				queued++
				continue
			}
			queued += len(items)
		}
		if queued == 0 {
			return
		}
	}
	s.t.Logf("soak: nudges still queued after %v (the checker judges them)", d)
}

// every runs f every d until ctx ends.
func every(ctx context.Context, d time.Duration, f func()) {
	tick := time.NewTicker(d)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			f()
		}
	}
}

// sampleStatus writes every agent's state as hostd status shows it,
// stamped when it was asked for and when the answer came: hostd's answer
// describes a moment between the two, so a loaded machine's slow answer
// never makes hostd look late, nor early. A connected agent's
// observation carries when its tunnel connected, so that its recovery is
// measured from hostd's own record, not from when a starved sampler
// happened to look.
func (s *soak) sampleStatus(ctx context.Context) {
	asked := s.h.Now()
	sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	st, err := s.api.Status(sctx)
	cancel()
	if err != nil {
		return // hostd is down: no observation
	}
	answered := s.h.Now()
	for _, p := range st.Polecats {
		e := history.Event{T: asked, Answered: answered, Kind: "status", Phase: "observe", Agent: p.Identity.String(), State: p.State}
		if p.Connected {
			e.Since = p.Since
		} else {
			e.State = "disconnected"
		}
		s.h.Add(e)
	}
}

// goroutines saves hostd's goroutines, grouped by stack, as
// goroutines-<phase>.txt beside the history: what a leak is made of.
func (s *soak) goroutines(phase string) {
	resp, err := http.Get("http://" + s.r.metrics + "/debug/pprof/goroutine?debug=1")
	if err != nil {
		return
	}
	defer resp.Body.Close()
	f, err := os.Create(filepath.Join(s.cfg.out, "goroutines-"+phase+".txt"))
	if err != nil {
		return
	}
	defer f.Close()
	_, _ = io.Copy(f, resp.Body)
}

// sample writes one resource sample of hostd from its metrics endpoint.
func (s *soak) sample(phase string) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+s.r.metrics+"/metrics", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return
	}
	defer resp.Body.Close()
	e := history.Event{Kind: "sample", Phase: phase}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		name, v, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			continue
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil {
			continue
		}
		switch name {
		case "go_goroutines":
			e.Goroutines = int(f)
		case "process_open_fds":
			e.FDs = int(f)
		case "process_resident_memory_bytes":
			e.RSS = int64(f)
		}
	}
	if e.Goroutines > 0 {
		s.h.Add(e)
	}
}

// safetyEvery is how often the run checks, while it goes on, what no
// later event can undo (invariant.Safety); a run shorter than four of them
// checks four times.
const safetyEvery = time.Minute

// safety is the cheap check during the run: the history so far and the
// lines typed and commands run so far, through invariant.Safety. A
// violation fails the run and stops its load at once, so a long run does
// not go on for hours past its failure; the end's full check still runs.
func (s *soak) safety(stopLoad func()) {
	events, err := history.ReadFile(filepath.Join(s.cfg.out, "history.jsonl"))
	if err != nil {
		s.t.Errorf("soak: the check during the run: %v", err)
		return
	}
	vs := invariant.Safety(append(events, s.typedAndRan(s.h.Now())...))
	for _, v := range vs {
		s.t.Errorf("soak: during the run, %s violated: %s", v.Invariant, v.Message)
		for _, e := range v.Events {
			s.t.Logf("  %s", e)
		}
	}
	if len(vs) > 0 {
		s.t.Logf("soak: stopping the load early; seed %d", s.cfg.seed)
		stopLoad()
	}
}

// typedAndRan observes, at t, the nudge lines each pane has received and
// the calls the stand-in gt has recorded.
func (s *soak) typedAndRan(t time.Time) []history.Event {
	s.mu.Lock()
	nudgeID := maps.Clone(s.nudged)
	s.mu.Unlock()
	var out []history.Event
	for _, a := range s.agents {
		var log string
		if a.container {
			log, _ = tryDocker("exec", s.r.container(a.name), "cat", a.paneLog)
		} else {
			b, _ := os.ReadFile(a.paneLog)
			log = string(b)
		}
		for _, line := range strings.Split(log, "\n") {
			var rec harness.PaneRecord
			if json.Unmarshal([]byte(line), &rec) != nil {
				continue
			}
			if op, ok := strings.CutPrefix(rec.Line, "soak "); ok {
				out = append(out, history.Event{T: t, Kind: "typed", Phase: "observe", Agent: a.id.String(), Op: op, NudgeID: nudgeID[op]})
			}
		}
	}
	for _, a := range s.agents {
		if b, err := os.ReadFile(a.ran); err == nil {
			b = b[:bytes.LastIndexByte(b, '\n')+1] // whole lines: a call may be writing its own
			for _, op := range strings.Fields(string(b)) {
				out = append(out, history.Event{T: t, Kind: "ran", Phase: "observe", Op: op})
			}
		}
	}
	return out
}

// observe writes what the run left: the lines each pane received, the
// calls the stand-in gt recorded, the pushes found in .repo.git and
// origin, git fsck of both, and hostd's word on every nudge.
func (s *soak) observe() {
	s.mu.Lock()
	pushed := s.pushed
	s.mu.Unlock()
	for _, e := range s.typedAndRan(time.Time{}) {
		s.h.Add(e)
	}
	s.observeData()
	for _, p := range s.hostdLogs() {
		s.h.Add(p)
	}

	// Every branch reaches origin through hostd's upstream queue.
	g := s.r.git
	inRepo := func(repo, commit, branch string) bool {
		_, err := g.TryGit(repo, "merge-base", "--is-ancestor", commit, "refs/heads/"+branch)
		return err == nil
	}
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(2 * time.Second) {
		missing := 0
		for c, b := range pushed {
			if !inRepo(g.Origin, c, b) {
				missing++
			}
		}
		if missing == 0 {
			break
		}
	}
	s.h.Add(history.Event{Kind: "origin-reachable", Phase: "observe"})
	for c, b := range pushed {
		for where, repo := range map[string]string{"repo": g.Repo, "origin": g.Origin} {
			if inRepo(repo, c, b) {
				s.h.Add(history.Event{Kind: "landed", Phase: "observe", Commit: c, Branch: b, Where: where})
			}
		}
	}
	for where, repo := range map[string]string{"repo": g.Repo, "origin": g.Origin} {
		out, err := g.TryGit(repo, "fsck", "--no-progress")
		s.h.Add(history.Event{Kind: "fsck", Phase: "observe", Where: where, OK: err == nil, Err: strings.TrimSpace(out)})
	}
}

// observeData brings each polecat's data together (a pull, then a push,
// retried) and writes every line of every soak file on both sides, and of
// their conflict copies, as file observations.
func (s *soak) observeData() {
	for _, a := range s.agents {
		for try := 0; try < 3; try++ {
			s.syncOp(a, true)
			s.syncOp(a, false)
		}
		sides := map[string]string{"host": s.listHost(a.hostData)}
		if a.container {
			sides["container"], _ = tryDocker("exec", s.r.container(a.name), "sh", "-c",
				`cd /work/results 2>/dev/null && for f in soak-*; do [ -f "$f" ] && sed "s|^|results/$f\t|" "$f"; done; true`)
		} else {
			sides["container"] = s.listHost(a.dataRoot)
		}
		for side, listing := range sides {
			for _, line := range strings.Split(listing, "\n") {
				path, op, ok := strings.Cut(line, "\t")
				if !ok {
					continue
				}
				e := history.Event{Kind: "file", Phase: "observe", Agent: a.id.String(), Side: side, Path: path, Hash: op}
				if base, _, isCopy := strings.Cut(path, ".conflict-"); isCopy {
					e.Of = base
				}
				s.h.Add(e)
			}
		}
	}
}

// listHost is every line of root/results/soak-*, each as "path\tline".
func (s *soak) listHost(root string) string {
	files, _ := filepath.Glob(filepath.Join(root, "results", "soak-*"))
	var b strings.Builder
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, line := range strings.Fields(string(data)) {
			fmt.Fprintf(&b, "results/%s\t%s\n", filepath.Base(f), line)
		}
	}
	return b.String()
}

// hostdLogs is hostd's final word on each nudge, from every hostd's JSON
// log ("nudge submitted", "nudge expired", ...).
func (s *soak) hostdLogs() []history.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []history.Event
	for _, p := range s.hostds {
		for _, line := range strings.Split(p.Output(), "\n") {
			var l struct {
				Time    time.Time     `json:"time"`
				Msg     string        `json:"msg"`
				ID      string        `json:"id"`
				Polecat wire.Identity `json:"polecat"`
				Detail  string        `json:"detail"`
			}
			if json.Unmarshal([]byte(line), &l) != nil || l.ID == "" {
				continue
			}
			outcome, ok := strings.CutPrefix(l.Msg, "nudge ")
			if !ok || outcome == "queued" {
				continue
			}
			if outcome == "submitted" {
				outcome = "delivered"
			}
			out = append(out, history.Event{T: l.Time, Kind: "nudge", Phase: "outcome", Agent: l.Polecat.String(), NudgeID: l.ID, Outcome: outcome, Reason: l.Detail})
		}
	}
	return out
}

// check runs the checker on the history and writes the summary and the
// resource plot; a violated invariant fails the run.
func (s *soak) check() {
	t := s.t
	events, err := history.ReadFile(filepath.Join(s.cfg.out, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	rep := invariant.Check(events, invariant.Options{})
	var sum strings.Builder
	if err := rep.WriteText(&sum); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(s.cfg.out, "summary.txt"), []byte(sum.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(s.cfg.out, "resources.svg"))
	if err != nil {
		t.Fatal(err)
	}
	if err := errors.Join(history.WritePlot(f, events), f.Close()); err != nil {
		t.Fatal(err)
	}
	t.Logf("soak summary (%s):\n%s", s.cfg.out, sum.String())
	if !rep.OK() {
		t.Fatalf("soak: invariants violated; seed %d reproduces the schedule", s.cfg.seed)
	}
}
