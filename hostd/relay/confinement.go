package relay

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/polecat-sidecar/sidecar/hostd/confine"
	"github.com/polecat-sidecar/sidecar/hostd/relay/gastown"
)

// policy is what a relayed command of the polecat at p, and every process
// it starts, may touch: read and run the system's and the relayed
// binaries; read the town but .runtime, .dolt-data and other polecats';
// write its own directory but its worktree's .git and .beads, bd's
// existing files, gt's running state and its own temporary directory;
// connect to the Dolt port alone. Nothing it writes can steer a process
// run unconfined later; docs/security.md ("a grammar mistake") says why.
func (s *Service) policy(p gastown.Place, tmp string) confine.Policy {
	rules := confine.System()
	for _, d := range s.binDirs {
		rules = append(rules, confine.Rule{Path: d, Access: confine.Read | confine.Exec})
	}
	for _, b := range s.bins {
		if real, err := filepath.EvalSymlinks(b); err == nil {
			rules = append(rules, confine.Rule{Path: real, Access: confine.Read | confine.Exec})
		}
	}
	rules = append(rules, townReadable(p)...)
	rw := func(paths ...string) {
		for _, path := range paths {
			if path != "" {
				rules = append(rules, confine.Rule{Path: path, Access: confine.Read | confine.Write})
			}
		}
	}
	if p.Polecat != "" {
		rules = append(rules, confine.Rule{Path: p.Polecat, Access: confine.Read})
	}
	rw(ownEntries(p)...)
	rw(beadsFiles(p.Beads)...)
	rw(beadsFiles(filepath.Join(p.Town, ".beads"))...)
	rw(tmp, filepath.Join(s.home, ".gt", "cmd-usage.jsonl"), filepath.Join(s.home, ".gt", "costs.jsonl"))
	if ownDir(beadsCircuit) {
		rw(beadsCircuit)
	}
	dirs, files := gasTownState(p.Town)
	rw(dirs...)
	rw(files...)
	if s.dir != "" {
		rules = append(rules, confine.Rule{Path: filepath.Join(s.dir, "gitconfig"), Access: confine.Read})
	}
	var ports []uint16
	if port := gastown.DoltPort(p.Town, getenv(s.base)); port > 0 && port < 1<<16 {
		ports = append(ports, uint16(port))
	}
	return confine.Policy{Rules: rules, ConnectTCP: ports}
}

// beadsSteering are the files of a beads directory that tell bd and gt
// where the beads are, how to reach them and what to run; beadsFiles
// leaves them out (with its directories: hooks, the database).
var beadsSteering = []string{"redirect", "config.yaml", "config.local.yaml", "config.json", "metadata.json", ".env", "dolt-server.port"}

// beadsFiles is what of the beads directory dir a relayed bd may write:
// its existing regular files but those that steer bd (a rule on a file
// lets it be written and truncated, not replaced, and no new file can be
// made there), and its .locks directory.
func beadsFiles(dir string) []string {
	if dir == "" {
		return nil
	}
	var out []string
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		switch {
		case e.Type().IsRegular() && !slices.Contains(beadsSteering, e.Name()):
			out = append(out, filepath.Join(dir, e.Name()))
		case e.IsDir() && e.Name() == ".locks":
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	return out
}

// ownEntries is what a relayed command may write of the polecat's own
// directory: every entry in it and in its worktree but the worktree's
// .git and .beads, which steer git and bd (and Gas Town's own processes
// run there unconfined), and which gastown.Locate checks instead. New
// entries cannot be made at the top of either (a rule covers what
// exists). A symlink is left out: the kernel would give its rule to what
// it points at, and the polecat chooses that (by a push, or its data).
func ownEntries(p gastown.Place) []string {
	var out []string
	add := func(dir string, skip ...string) {
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if path := filepath.Join(dir, e.Name()); e.Type()&os.ModeSymlink == 0 && !slices.Contains(skip, path) {
				out = append(out, path)
			}
		}
	}
	if p.Polecat != "" {
		add(p.Polecat, p.Worktree)
	}
	if p.Worktree != "" {
		add(p.Worktree, filepath.Join(p.Worktree, ".git"), filepath.Join(p.Worktree, ".beads"))
	}
	return out
}

// beadsCircuit is where bd keeps its Dolt circuit breaker's state (a
// fixed path in bd v1.0.0, written on every connection).
const beadsCircuit = "/tmp/beads-circuit"

// ownDir says whether path is a directory, not a symlink, of hostd's own
// user: in /tmp, anyone could have made it a link to anywhere, which its
// rule would then grant.
func ownDir(path string) bool {
	fi, err := os.Lstat(path)
	if err != nil || !fi.IsDir() {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Geteuid()
}

// gasTownState is where gt keeps its running state in the town for a
// polecat, which relayed commands may write: dirs (its heartbeat, the
// nudge queue and poller, locks, the town log, channel events), which
// hostd makes when they are missing so that their rules can be given (a
// rule needs its path; gt would make them on first use, as the operator),
// and files it writes only where they exist: the event log and its lock.
func gasTownState(town string) (dirs, files []string) {
	runtime := filepath.Join(town, ".runtime")
	dirs = []string{
		filepath.Join(runtime, "heartbeats"), filepath.Join(runtime, "nudge_queue"),
		filepath.Join(runtime, "nudge_poller"), filepath.Join(runtime, "locks"),
		filepath.Join(town, "logs"), filepath.Join(town, "events"),
	}
	files = []string{filepath.Join(town, ".events.jsonl"), filepath.Join(town, ".events.jsonl.lock")}
	return dirs, files
}

// townReadable is a read rule for each entry of the town but .runtime and
// .dolt-data, and, in each rig (a directory with polecats/), for each entry but the
// other polecats' directories; symlinks among them are left out (their
// rule would be their target's, the whole of it).
func townReadable(p gastown.Place) []confine.Rule {
	var rules []confine.Rule
	read := func(path string) { rules = append(rules, confine.Rule{Path: path, Access: confine.Read}) }
	entries, _ := os.ReadDir(p.Town)
	for _, e := range entries {
		path := filepath.Join(p.Town, e.Name())
		switch {
		case e.Name() == ".runtime", e.Name() == ".dolt-data", e.Type()&os.ModeSymlink != 0:
		case e.IsDir() && gastown.IsRealDir(p.Town, filepath.Join(path, "polecats")):
			rigEntries, _ := os.ReadDir(path)
			for _, re := range rigEntries {
				if re.Name() != "polecats" && re.Type()&os.ModeSymlink == 0 {
					read(filepath.Join(path, re.Name()))
				}
			}
			rules = append(rules, confine.Rule{Path: filepath.Join(path, "polecats"), Access: confine.List}) // gt status lists them
			polecats, _ := os.ReadDir(filepath.Join(path, "polecats"))
			for _, pe := range polecats {
				if strings.HasPrefix(pe.Name(), ".") && pe.Type()&os.ModeSymlink == 0 {
					read(filepath.Join(path, "polecats", pe.Name()))
				}
			}
		default:
			read(path)
		}
	}
	return rules
}

// runnableDirs is the directories of PATH whose every file relayed
// commands may read and run: not the town, HOME, nor one holding either or
// inside the town (a binary kept there is granted alone, as a file); each
// left out is logged.
func (s *Service) runnableDirs(path []string) []string {
	var out []string
	for _, d := range path {
		d = filepath.Clean(d)
		if real, err := filepath.EvalSymlinks(d); err == nil {
			d = real // a rule is never given through a link
		}
		switch {
		case !filepath.IsAbs(d):
		case s.cfg.Town != "" && (gastown.Inside(d, s.cfg.Town) || gastown.Inside(s.cfg.Town, d)), s.home != "" && gastown.Inside(d, s.home):
			s.log.Warn("relay: relayed commands may not read or run everything in this PATH directory: it holds the town or HOME, or lies in the town",
				"dir", d)
		default:
			out = append(out, d)
		}
	}
	return out
}
