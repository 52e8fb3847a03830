package worktree

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/polecat-sidecar/sidecar/hostd/git/internal/limited"
)

// Why each guarded directory is guarded, for the pushing polecat.
const (
	whyBeads     = "bd's directory: host processes there run its hooks and follow its redirect, config.yaml and metadata.json"
	whyGithooks  = "Gas Town's git hooks directory (it sets core.hooksPath=.githooks where one exists)"
	whyHooksPath = "the worktree's git hooks directory (core.hooksPath)"
)

// A Guard judges one pushed commit against the host worktrees where its
// branch is checked out: nothing under a guarded directory (.beads,
// .githooks, the worktree's hooks path) nor any of their parents added,
// changed or removed, no symlink resolving outside that the worktree does
// not already hold, names compared folded (foldPath; docs/security.md). It
// is fed the commit's tree entry by entry (Visit), reads its links'
// targets (Finish), then judges each worktree (Judge).
type Guard struct {
	dirs     []guardedDir
	entries  map[string]indexEntry // the commit's entries under a guarded directory, by path
	links    map[string]string     // the commit's symlinks: path to blob id
	view     *linkView
	escaping map[string]string // the commit's symlinks that may resolve outside: path to why
}

// guardedDir is a guarded directory, folded, relative to the worktree
// ("" when it is the worktree itself), and why it is guarded.
type guardedDir struct {
	folded, why string
}

// indexEntry is a file, symlink or gitlink of a tree or an index: its mode
// and object id.
type indexEntry struct {
	mode, oid string
}

// Violation is a path a push may not check out in a host worktree, and
// why, in words for the pushing polecat.
type Violation struct {
	path, why string
}

// String is the path, quoted, and why, for the pushing polecat.
func (v Violation) String() string { return quote(v.path) + ": " + v.why }

// NewGuard prepares the guard of a commit to be checked out in wts,
// reading each one's core.hooksPath.
func NewGuard(wts []Worktree) (*Guard, error) {
	g := &Guard{dirs: []guardedDir{{".beads", whyBeads}, {".githooks", whyGithooks}},
		entries: map[string]indexEntry{}, links: map[string]string{}, view: newLinkView()}
	for _, wt := range wts {
		if wt.Dir == "" {
			continue
		}
		hp, ok, err := hooksPath(wt)
		if err != nil {
			return nil, err
		}
		if ok && !slices.ContainsFunc(g.dirs, func(d guardedDir) bool { return d.folded == hp }) {
			g.dirs = append(g.dirs, guardedDir{hp, whyHooksPath})
		}
	}
	return g, nil
}

// hooksPath is the directory inside wt that git runs hooks from there,
// relative to wt and folded, from its effective core.hooksPath (its own
// configuration, the repository's and the host user's, never hostd's
// override); ok is false when that is unset or outside wt.
func hooksPath(wt Worktree) (dir string, ok bool, err error) {
	out, err := worktreeGit(wt, "config", "--type=path", "--get", "core.hooksPath").Output()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit) && exit.ExitCode() == 1:
		return "", false, nil // unset
	case err != nil:
		return "", false, fmt.Errorf("reading core.hooksPath of the worktree: %w", err)
	}
	hp := strings.TrimRight(string(out), "\n")
	if !filepath.IsAbs(hp) {
		hp = filepath.Join(wt.Dir, hp)
	}
	root, hp := foldPath(filepath.ToSlash(filepath.Clean(wt.Dir))), foldPath(filepath.ToSlash(filepath.Clean(hp)))
	if hp == root {
		return "", true, nil
	}
	rel, inside := strings.CutPrefix(hp, strings.TrimSuffix(root, "/")+"/")
	return rel, inside, nil
}

// guarded is the guarded directory folded (a path as foldPath gives it)
// is in, is, or is a parent of; nil when there is none.
func (g *Guard) guarded(folded string) *guardedDir {
	for i, d := range g.dirs {
		if d.folded == "" || folded == d.folded || strings.HasPrefix(folded, d.folded+"/") || strings.HasPrefix(d.folded, folded+"/") {
			return &g.dirs[i]
		}
	}
	return nil
}

// Visit takes one entry of the commit's tree (not a tree itself), as
// ls-tree lists it.
func (g *Guard) Visit(mode, oid, path string) {
	folded := foldPath(path)
	switch mode {
	case "120000":
		g.links[path] = oid
		g.view.addPath(folded)
	case "160000": // a gitlink: checked out as an empty directory
		g.view.addPath(folded + "/")
	default:
		g.view.addPath(folded)
	}
	if g.guarded(folded) != nil {
		g.entries[path] = indexEntry{mode, oid}
	}
}

// Finish reads the targets of the commit's symlinks and judges where each
// resolves.
func (g *Guard) Finish() error {
	targets, err := readBlobs(g.links)
	if err != nil {
		return err
	}
	for path := range g.links {
		g.view.addLink(path, foldPath(path), targets[path])
	}
	g.escaping = map[string]string{}
	for path := range g.links {
		if why := g.view.escapes(path); why != "" {
			g.escaping[path] = why
		}
	}
	return nil
}

// Judge lists what checking the commit out in wt would do that the guard
// refuses, sorted by path, comparing it with wt's index: the tree git's
// checkout replaces there (updateInstead first makes sure the files match
// it).
func (g *Guard) Judge(wt Worktree) ([]Violation, error) {
	// Links of the index are needed only to excuse the commit's escaping
	// links that the worktree already holds.
	needLinks := len(g.escaping) > 0
	base, err := listIndex(wt, g, needLinks)
	if err != nil {
		return nil, err
	}
	why := map[string]string{}
	for path, e := range g.entries {
		switch b, ok := base.entries[path]; {
		case !ok:
			why[path] = "added: " + g.guarded(foldPath(path)).why
		case b != e:
			why[path] = "changed: " + g.guarded(foldPath(path)).why
		}
	}
	for path := range base.entries {
		if _, ok := g.entries[path]; !ok {
			why[path] = "removed: " + g.guarded(foldPath(path)).why
		}
	}
	var held map[string][]byte // the index's link targets, read once needed
	for path, reason := range g.escaping {
		if oid, ok := base.links[path]; ok && oid == g.links[path] {
			if held == nil {
				if held, err = readBlobs(base.links); err != nil {
					return nil, err
				}
				for p := range base.links {
					base.view.addLink(p, foldPath(p), held[p])
				}
			}
			if base.view.escapes(path) != "" {
				continue // the worktree holds it as it is, and there it resolved outside too
			}
		}
		link := fmt.Sprintf("a symlink to %s: %s", quote(g.view.target(path)), reason)
		if w, ok := why[path]; ok {
			link = w + "; and " + link
		}
		why[path] = link
	}
	vs := make([]Violation, 0, len(why))
	for path, w := range why {
		vs = append(vs, Violation{path, w})
	}
	slices.SortFunc(vs, func(a, b Violation) int { return strings.Compare(a.path, b.path) })
	return vs, nil
}

// indexState is what judge needs of a worktree's index: its entries under
// a guarded directory, by path, and, when asked for, its symlinks and the
// view its paths make.
type indexState struct {
	entries map[string]indexEntry
	links   map[string]string
	view    *linkView
}

// listIndex reads wt's index (git ls-files --stage), keeping the entries
// g guards and, with links, what judging its symlinks needs.
func listIndex(wt Worktree, g *Guard, links bool) (indexState, error) {
	st := indexState{entries: map[string]indexEntry{}, links: map[string]string{}, view: newLinkView()}
	cmd := worktreeGit(wt, "ls-files", "--stage", "-z")
	out, err := cmd.StdoutPipe()
	if err != nil {
		return st, fmt.Errorf("listing the worktree's index: %w", err)
	}
	var stderr strings.Builder
	cmd.Stderr = &limited.Writer{W: &stderr, N: 1024}
	if err := cmd.Start(); err != nil {
		return st, fmt.Errorf("listing the worktree's index: %w", err)
	}
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	sc.Split(splitNUL)
	for sc.Scan() {
		meta, path, ok := strings.Cut(sc.Text(), "\t")
		f := strings.Fields(meta)
		if !ok || len(f) != 3 {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			return st, fmt.Errorf("listing the worktree's index: unexpected line %q", limited.Truncate(sc.Text()))
		}
		folded := foldPath(path)
		if g.guarded(folded) != nil {
			st.entries[path] = indexEntry{f[0], f[1]}
		}
		if !links {
			continue
		}
		switch f[0] {
		case "120000":
			st.links[path] = f[1]
			st.view.addPath(folded)
		case "160000":
			st.view.addPath(folded + "/")
		default:
			st.view.addPath(folded)
		}
	}
	if err := sc.Err(); err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return st, fmt.Errorf("listing the worktree's index: %w", err)
	}
	if err := cmd.Wait(); err != nil {
		return st, fmt.Errorf("listing the worktree's index: %w: %s", err, strings.TrimSpace(stderr.String()))
	}
	return st, nil
}

// readBlobs reads the blobs ids names (path to blob id), by path, through
// one git cat-file --batch, each cut to maxLinkTarget+1 bytes (enough to
// know a link's target is too long).
func readBlobs(ids map[string]string) (map[string][]byte, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	paths := make([]string, 0, len(ids))
	for p := range ids {
		paths = append(paths, p)
	}
	cmd := exec.Command("git", "cat-file", "--batch")
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("reading symlink targets: %w", err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("reading symlink targets: %w", err)
	}
	var stderr strings.Builder
	cmd.Stderr = &limited.Writer{W: &stderr, N: 1024}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("reading symlink targets: %w", err)
	}
	go func() {
		w := bufio.NewWriter(in)
		for _, p := range paths {
			fmt.Fprintln(w, ids[p])
		}
		_ = w.Flush()
		in.Close()
	}()
	blobs := make(map[string][]byte, len(paths))
	r := bufio.NewReader(out)
	for _, p := range paths {
		b, err := readBatchBlob(r, ids[p])
		if err != nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			return nil, fmt.Errorf("reading the target of symlink %s: %w", quote(p), err)
		}
		blobs[p] = b
	}
	if err := cmd.Wait(); err != nil {
		return nil, fmt.Errorf("reading symlink targets: %w: %s", err, strings.TrimSpace(stderr.String()))
	}
	return blobs, nil
}

// readBatchBlob reads one answer of git cat-file --batch for the blob
// oid, keeping at most maxLinkTarget+1 bytes of it.
func readBatchBlob(r *bufio.Reader, oid string) ([]byte, error) {
	header, err := r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	f := strings.Fields(header)
	if len(f) != 3 || f[0] != oid || f[1] != "blob" {
		return nil, fmt.Errorf("git cat-file answered %q", limited.Truncate(strings.TrimSpace(header)))
	}
	size, err := strconv.ParseInt(f[2], 10, 64)
	if err != nil || size < 0 {
		return nil, fmt.Errorf("git cat-file answered %q", limited.Truncate(strings.TrimSpace(header)))
	}
	var b bytes.Buffer
	if _, err := io.CopyN(&b, r, min(size, maxLinkTarget+1)); err != nil {
		return nil, err
	}
	if _, err := io.CopyN(io.Discard, r, size-int64(b.Len())+1); err != nil { // and the newline
		return nil, err
	}
	return b.Bytes(), nil
}
