// Package gastown reads a Gas Town town the way Gas Town does for a host
// polecat, from the host's own view and never through a symlink below the
// town: where the polecat's worktree is (Worktree), its place (Locate: the
// rig, its beads and repository, a worktree whose .beads and .git a
// polecat could have made steer relayed commands refused), the Dolt
// server's port, and the environment Gas Town gives a host polecat
// session (PolecatEnv). hostd/relay runs relayed commands there.
package gastown

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// worktree is where Gas Town keeps id's git worktree:
// <town>/<rig>/polecats/<name>/<rig> (internal/polecat/session_manager.go,
// clonePath).
func worktree(town string, id wire.Identity) string {
	return filepath.Join(town, id.Rig, "polecats", id.Name, id.Rig)
}

// workDir is where a relayed command of id runs, as a host polecat's gt
// and bd run in its worktree: the worktree when it is a directory, else
// the rig's directory <town>/<rig> when that is one, else the town. Each
// component below the town must be a directory, not a link to one, so a
// link the polecat made cannot send the command elsewhere
// (docs/security.md, "The host, through the relay").
func workDir(town string, id wire.Identity) string {
	dir, depth := town, 0
	for _, c := range []string{id.Rig, "polecats", id.Name, id.Rig} {
		next := filepath.Join(dir, c)
		fi, err := os.Lstat(next)
		if err != nil || !fi.IsDir() {
			break
		}
		dir, depth = next, depth+1
	}
	switch depth {
	case 4:
		return dir
	case 0:
		return town
	default:
		return filepath.Join(town, id.Rig)
	}
}

// rigPrefix is the rig's beads prefix, which names its polecats' tmux
// sessions: rigs.<rig>.beads.prefix in <town>/mayor/rigs.json, or in
// <town>/rigs.json when the first is missing; "gt" when neither names one
// (internal/session/registry.go, BuildPrefixRegistryFromTown, PrefixFor).
func rigPrefix(town, rig string) string {
	for _, p := range []string{filepath.Join(town, "mayor", "rigs.json"), filepath.Join(town, "rigs.json")} {
		data, err := os.ReadFile(p)
		if os.IsNotExist(err) {
			continue
		}
		var rigs struct {
			Rigs map[string]struct {
				Beads *struct {
					Prefix string `json:"prefix"`
				} `json:"beads"`
			} `json:"rigs"`
		}
		if err == nil && json.Unmarshal(data, &rigs) == nil {
			if b := rigs.Rigs[rig].Beads; b != nil && b.Prefix != "" {
				return b.Prefix
			}
		}
		break
	}
	return "gt"
}

// DoltPort is the town's Dolt server port, or 0 when none is set: the
// listener port in <town>/.dolt-data/config.yaml, else GT_DOLT_PORT from
// getenv, else env.GT_DOLT_PORT in <town>/mayor/daemon.json
// (internal/config/env.go, resolveDoltPort).
func DoltPort(town string, getenv func(string) string) int {
	if data, err := os.ReadFile(filepath.Join(town, ".dolt-data", "config.yaml")); err == nil {
		if p := listenerPort(data); p > 0 {
			return p
		}
	}
	if p, err := strconv.Atoi(getenv("GT_DOLT_PORT")); err == nil && p > 0 {
		return p
	}
	var daemon struct {
		Env map[string]string `json:"env"`
	}
	if data, err := os.ReadFile(filepath.Join(town, "mayor", "daemon.json")); err == nil && json.Unmarshal(data, &daemon) == nil {
		if p, err := strconv.Atoi(daemon.Env["GT_DOLT_PORT"]); err == nil && p > 0 {
			return p
		}
	}
	return 0
}

// listenerPort is the first "port:" inside the top-level "listener:" block
// of the config.yaml `gt dolt start` writes, or 0.
func listenerPort(yaml []byte) int {
	in := false
	for sc := bufio.NewScanner(bytes.NewReader(yaml)); sc.Scan(); {
		line := sc.Text()
		item := strings.TrimSpace(line)
		switch {
		case item == "listener:":
			in = true
		case in && strings.HasPrefix(item, "port:"):
			if p, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(item, "port:"))); err == nil {
				return p
			}
		case line != "" && line[0] != ' ' && line[0] != '\t':
			in = false
		}
	}
	return 0
}

// polecatSlot is the polecat's position among the directories in
// <town>/<rig>/polecats whose names do not start with '.', in name order
// (their count when it is not among them, 0 when the directory cannot be
// read), which Gas Town gives a session for port offsets
// (internal/polecat/session_manager.go, polecatSlot).
func polecatSlot(town string, id wire.Identity) int {
	entries, err := os.ReadDir(filepath.Join(town, id.Rig, "polecats"))
	if err != nil {
		return 0
	}
	slot := 0
	for _, e := range entries {
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		if e.Name() == id.Name {
			return slot
		}
		slot++
	}
	return slot
}

// Worktree is id's git worktree on the host and whether it is there, each
// path component a directory as workDir checks (hostd run reads the
// polecat's branch from it).
func Worktree(town string, id wire.Identity) (string, bool) {
	dir := workDir(town, id)
	return dir, dir == worktree(town, id)
}
