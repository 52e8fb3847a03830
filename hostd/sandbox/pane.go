package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/polecat-sidecar/sidecar/hostd/state"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// A relayed session cycle (gt handoff --cycle, run by Claude's PreCompact
// hook) only saves the state: gt runs outside any pane, and Gas Town's own
// respawn would drop the exec wrapper and bring the agent back on the
// host. So 'hostd run' records its pane (Panes.Record) and hostd serve
// respawns it with Gas Town's command (Panes.Respawn), which starts the
// next session in the same sandbox. docs/migrating.md, "Gas Town starts
// the container: hostd run".

// Pane is the host tmux pane 'hostd run' shows a polecat's session in.
type Pane struct {
	// Socket is the tmux server's socket ($TMUX's first field).
	Socket string `json:"socket"`
	// ID is the pane ($TMUX_PANE, %N).
	ID string `json:"pane"`
	// PID is hostd run's process; the pane is respawned only while it is
	// the pane's process (or that process's child), so a pane that went
	// on to run something else is left alone.
	PID int `json:"pid"`
}

// PaneFromEnv is the pane this process runs in, from tmux's variables;
// ok is false outside tmux.
func PaneFromEnv(getenv func(string) string) (p Pane, ok bool) {
	sock, _, _ := strings.Cut(getenv("TMUX"), ",")
	id := getenv("TMUX_PANE")
	if sock == "" || !strings.HasPrefix(id, "%") {
		return Pane{}, false
	}
	return Pane{Socket: sock, ID: id, PID: os.Getpid()}, true
}

// Panes is where a town's hostd run processes record their panes: one
// file per polecat, <dir>/<rig>/<name>.json.
type Panes struct {
	// Dir is the directory (state.Dir.Panes).
	Dir string

	mu   sync.Mutex
	last map[wire.Identity]time.Time // when Respawn last respawned each pane
}

// RespawnCooldown is the least time between two respawns of a polecat's
// pane: a polecat looping gt handoff --cycle restarts its session at most
// this often.
const RespawnCooldown = 10 * time.Second

func (ps *Panes) file(id wire.Identity) string {
	return filepath.Join(ps.Dir, id.Rig, id.Name+".json")
}

// Record says that id's session is shown in p, replacing what an earlier
// hostd run of id recorded.
func (ps *Panes) Record(id wire.Identity, p Pane) error {
	if err := os.MkdirAll(filepath.Join(ps.Dir, id.Rig), 0o700); err != nil {
		return fmt.Errorf("recording the pane of %s: %w", id, err)
	}
	return state.Save(ps.file(id), p)
}

// Forget removes id's record if it is still the one of process pid (a
// later hostd run may have replaced it).
func (ps *Panes) Forget(id wire.Identity, pid int) {
	if p, err := ps.load(id); err == nil && p.PID == pid {
		_ = os.Remove(ps.file(id))
	}
}

// Prune removes id's record unless the hostd run that made it still runs
// (hostd forget and nuke: a hostd run killed before it could Forget its
// record leaves it), and returns the path of the record it removed, ""
// for none. A live hostd run's record stays, since that hostd run removes
// it as it ends, and its session may yet cycle; an unreadable one goes.
func (ps *Panes) Prune(id wire.Identity) (string, error) {
	p, err := ps.load(id)
	switch {
	case errors.Is(err, ErrNoPane):
		return "", nil
	case err == nil && processRuns(p.PID):
		return "", nil
	}
	if removed, err := state.RemoveIn(ps.Dir, id.Rig, id.Name+".json"); !removed {
		return "", err
	}
	return ps.file(id), nil
}

// processRuns says whether process pid exists (signal 0 reaches it, or
// it is another user's).
func processRuns(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// load reads id's record. The identity is the polecat's (its certificate
// names it, a relayed command asks), so the file is opened through
// os.Root: nothing it names can leave the directory.
func (ps *Panes) load(id wire.Identity) (Pane, error) {
	root, err := os.OpenRoot(ps.Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return Pane{}, ErrNoPane
	}
	if err != nil {
		return Pane{}, fmt.Errorf("opening the panes of hostd run: %w", err)
	}
	defer root.Close()
	b, err := root.ReadFile(filepath.Join(id.Rig, id.Name+".json"))
	if errors.Is(err, fs.ErrNotExist) {
		return Pane{}, ErrNoPane
	}
	if err != nil {
		return Pane{}, fmt.Errorf("reading the pane recorded for %s: %w", id, err)
	}
	var p Pane
	if err := json.Unmarshal(b, &p); err != nil {
		return Pane{}, &state.CorruptError{Path: ps.file(id), Err: err}
	}
	if p.Socket == "" || !strings.HasPrefix(p.ID, "%") || p.PID <= 0 {
		return Pane{}, fmt.Errorf("the pane recorded for %s is incomplete: %+v", id, p)
	}
	return p, nil
}

// ErrNoPane is Respawn's answer for a polecat whose session no hostd run
// shows (not in a sandbox, or started outside tmux).
var ErrNoPane = errors.New("no hostd run pane is recorded for this polecat")

// Respawn restarts id's session the way Gas Town cycles a host polecat's:
// it clears the pane's history and respawns it (tmux respawn-pane -k)
// with the command the pane was started with, Gas Town's startup command
// with its exec wrapper, so the next session starts in the same sandbox.
// It refuses when the pane no longer runs the recorded hostd run, and
// within RespawnCooldown of the last respawn.
func (ps *Panes) Respawn(ctx context.Context, id wire.Identity, log *slog.Logger) error {
	p, err := ps.load(id)
	if err != nil {
		return err
	}
	ps.mu.Lock()
	if ps.last == nil {
		ps.last = map[wire.Identity]time.Time{}
	}
	if t, ok := ps.last[id]; ok && time.Since(t) < RespawnCooldown {
		ps.mu.Unlock()
		return fmt.Errorf("respawned %v ago: a session cycles at most once every %v", time.Since(t).Round(time.Second), RespawnCooldown)
	}
	ps.last[id] = time.Now()
	ps.mu.Unlock()

	tmux := func(args ...string) (string, error) {
		out, err := exec.CommandContext(ctx, "tmux", append([]string{"-S", p.Socket}, args...)...).CombinedOutput()
		if err != nil {
			return "", fmt.Errorf("tmux %s: %v: %s", args[0], err, strings.TrimSpace(string(out)))
		}
		return strings.TrimSpace(string(out)), nil
	}
	out, err := tmux("display-message", "-p", "-t", p.ID, "#{pane_id} #{pane_pid}")
	if err != nil {
		return fmt.Errorf("finding the pane of %s: %w", id, err)
	}
	if !strings.HasPrefix(out, p.ID+" ") { // tmux 3.3 answers a missing pane with an empty line
		return fmt.Errorf("finding the pane of %s: pane %s is gone (tmux says %q)", id, p.ID, out)
	}
	if pid, _ := strconv.Atoi(strings.TrimPrefix(out, p.ID+" ")); pid != p.PID && parentOf(ctx, p.PID) != pid {
		return fmt.Errorf("respawning pane %s: it no longer runs hostd run (process %d; its process is %d)", p.ID, p.PID, pid)
	}
	if _, err := tmux("clear-history", "-t", p.ID); err != nil {
		log.Warn("clearing the pane's history before the respawn", "polecat", id, "err", err)
	}
	if _, err := tmux("respawn-pane", "-k", "-t", p.ID); err != nil {
		return fmt.Errorf("respawning the pane of %s: %w", id, err)
	}
	return nil
}

// parentOf is process pid's parent (0 when unknown): hostd run is the
// pane's process when Gas Town's command execs it, else a shell's child.
func parentOf(ctx context.Context, pid int) int {
	out, err := exec.CommandContext(ctx, "ps", "-o", "ppid=", "-p", strconv.Itoa(pid)).Output()
	if err != nil {
		return 0
	}
	ppid, _ := strconv.Atoi(strings.TrimSpace(string(out)))
	return ppid
}
