// Package state owns hostd's runtime directory, <town>/.runtime/hostd:
// where each file lives (the control socket, config.yaml, the persisted
// liveness states, upstream and nudge queues, the git hooks, the data
// channel's bases and journal, the QUIC reset key, hostd run's panes and
// failed starts), and how JSON state is loaded and saved (atomic
// replacement, one clear error for a corrupt file), and how what it keeps
// of one polecat is removed, contained in it (RemoveIn). Every service
// that persists goes through it.
package state

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/polecat-sidecar/sidecar/internal/atomicfile"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// Dir is a town's hostd runtime directory.
type Dir string

// For is the runtime directory of the town rooted at town.
func For(town string) Dir { return Dir(filepath.Join(town, ".runtime", "hostd")) }

// Path is the directory itself.
func (d Dir) Path() string { return string(d) }

// Socket is the control socket the CLI reaches the daemon on.
func (d Dir) Socket() string { return d.file("hostd.sock") }

// Config is the config file read when --config is not given.
func (d Dir) Config() string { return d.file("config.yaml") }

// Liveness holds every polecat's last judged state and recent events.
func (d Dir) Liveness() string { return d.file("liveness.json") }

// Upstream holds the branches waiting to be pushed to the rigs' origins.
func (d Dir) Upstream() string { return d.file("upstream.json") }

// Hooks is the git hooks directory receive-pack runs with.
func (d Dir) Hooks() string { return d.file("hooks") }

// ResetKey holds the QUIC stateless reset key.
func (d Dir) ResetKey() string { return d.file("quic-reset.key") }

// Data keeps each polecat's data base (what was last sent or taken) and
// the transfer journal.
func (d Dir) Data() string { return d.file("data") }

// Nudges is the nudge queue: every nudge not yet delivered, expired or
// cancelled.
func (d Dir) Nudges() string { return d.file("nudges.json") }

// Landed holds each push's record of the refs it landed, emptied at start.
func (d Dir) Landed() string { return d.file("landed") }

// Panes holds, per polecat, the host tmux pane its hostd run shows its
// sandbox's session in.
func (d Dir) Panes() string { return d.file("panes") }

// StartFailures holds, per polecat, hostd run's last failure to start it,
// until a start succeeds: written by hostd serve when hostd run reports
// it, by hostd run itself when serve is down.
func (d Dir) StartFailures() string { return d.file("start-failures") }

// Relay is the relay's directory: the git configuration and the empty
// hooks directory relayed commands run with, and each polecat's
// temporary directory.
func (d Dir) Relay() string { return d.file("relay") }

// PolecatData is the polecat's directory in Data: its base and delete
// hold.
func (d Dir) PolecatData(id wire.Identity) string { return filepath.Join(d.Data(), id.Rig, id.Name) }

// RelayTemp is the polecat's temporary directory in Relay, its relayed
// commands' TMPDIR.
func (d Dir) RelayTemp(id wire.Identity) string {
	return filepath.Join(d.Relay(), "tmp", id.Rig, id.Name)
}

func (d Dir) file(name string) string { return filepath.Join(string(d), name) }

// RemovePolecat removes the directories the runtime directory keeps for
// the polecat alone, PolecatData and RelayTemp, and returns those it
// removed. The services keep the rest of what they hold of a polecat in
// shared files (liveness.json, nudges.json) and remove it themselves; a
// service that still runs removes its directory itself first (the data
// service under its transfer lock).
func (d Dir) RemovePolecat(id wire.Identity) ([]string, error) {
	if err := id.Validate(); err != nil {
		return nil, err
	}
	var removed []string
	for _, dir := range []string{d.Data(), filepath.Join(d.Relay(), "tmp")} {
		ok, err := RemoveIn(dir, id.Rig, id.Name)
		if err != nil {
			return removed, err
		}
		if ok {
			removed = append(removed, filepath.Join(dir, id.Rig, id.Name))
		}
	}
	return removed, nil
}

// RemoveIn removes the entry root/elems[0]/elems[1]/..., with everything
// under it, and says whether there was one. Each element is one name (not
// empty, ".", "..", nor holding a separator), and the removal is contained
// in root (os.Root): a symlink on the way is never followed out of it, and
// one at the end is removed, not what it names. A missing root or entry is
// not an error.
func RemoveIn(root string, elems ...string) (bool, error) {
	for _, e := range elems {
		if e == "" || e == "." || e == ".." || strings.ContainsAny(e, `/\`) {
			return false, fmt.Errorf("removing %q under %s: each element must be one name", e, root)
		}
	}
	r, err := os.OpenRoot(root)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("opening %s: %w", root, err)
	}
	defer r.Close()
	rel := filepath.Join(elems...)
	if _, err := r.Lstat(rel); errors.Is(err, fs.ErrNotExist) {
		return false, nil
	} else if err != nil {
		return false, fmt.Errorf("looking for %s in %s: %w", rel, root, err)
	}
	if err := r.RemoveAll(rel); err != nil {
		return false, fmt.Errorf("removing %s from %s: %w", rel, root, err)
	}
	return true, nil
}

// Ensure creates the directory and makes it 0700: it holds the control
// socket, which must be reachable by this user only.
func (d Dir) Ensure() error {
	if err := os.MkdirAll(string(d), 0o700); err != nil {
		return fmt.Errorf("creating runtime directory %s: %w", d, err)
	}
	if err := os.Chmod(string(d), 0o700); err != nil {
		return fmt.Errorf("securing runtime directory %s: %w", d, err)
	}
	return nil
}

// QUICResetKey returns the QUIC stateless reset key, making it on first
// use. Keeping it across restarts lets a restarted hostd reset its
// predecessor's connections the moment an agent sends stream data, rather
// than after the idle timeout.
func (d Dir) QUICResetKey() (*[32]byte, error) {
	var key [32]byte
	b, err := os.ReadFile(d.ResetKey())
	if err == nil && len(b) == len(key) {
		copy(key[:], b)
		return &key, nil
	}
	_, _ = rand.Read(key[:])
	if err := atomicfile.Write(d.ResetKey(), key[:], 0o600); err != nil {
		return nil, fmt.Errorf("saving QUIC reset key: %w", err)
	}
	return &key, nil
}

// CorruptError is a state file that exists but cannot be decoded. hostd
// refuses to start on it rather than lose what it held.
type CorruptError struct {
	Path string
	Err  error
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("%s is corrupt (%v); move it aside to start afresh", e.Path, e.Err)
}

func (e *CorruptError) Unwrap() error { return e.Err }

// Load decodes the JSON file at path into v. A missing file leaves v as
// it is; one that does not decode is a *CorruptError.
func Load(path string, v any) error {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return &CorruptError{Path: path, Err: err}
	}
	return nil
}

// Save replaces the file at path with v as JSON, readable by this user
// only, atomically.
func Save(path string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encoding %s: %w", path, err)
	}
	return atomicfile.Write(path, append(b, '\n'), 0o600)
}
