package gastown

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// Place is where a polecat's relayed commands run and what they work on,
// found from the host's own view of the town: Gas Town's layout, each
// directory reached without following a symlink, and the few files Gas
// Town writes that say where things are (the rig's beads redirect, the
// worktree's .git) read only where hostd can tell Gas Town wrote them.
type Place struct {
	Town    string
	Rig     string // <town>/<rig>
	Polecat string // <town>/<rig>/polecats/<name>, "" when it is not a directory
	// Worktree is the polecat's worktree, "" when there is none; Dir is
	// where gt runs: the worktree, else the rig's directory, else the town.
	Worktree, Dir string
	// Beads is the rig's beads directory (<town>/<rig>/.beads, or where
	// its redirect leads inside the rig), "" when the rig has none.
	Beads string
	// Repo is the rig's bare repository, gitdir the worktree's own
	// directory inside it ("" when it cannot be told).
	Repo   string
	gitdir string
}

// Locate finds id's place in town, refusing a worktree whose files that
// steer gt, bd and git (its .beads, its .git) are not as Gas Town and git
// make them: a polecat could have written them, and relayed commands
// would follow them out of its place.
func Locate(town string, id wire.Identity) (Place, error) {
	p := Place{Town: town, Rig: filepath.Join(town, id.Rig), Repo: filepath.Join(town, id.Rig, ".repo.git")}
	p.Dir = workDir(town, id)
	if !IsRealDir(town, p.Rig) {
		p.Rig = ""
		return p, nil
	}
	if d := filepath.Join(p.Rig, "polecats", id.Name); IsRealDir(town, d) {
		p.Polecat = d
	}
	if p.Dir == worktree(town, id) {
		p.Worktree = p.Dir
	}
	p.Beads = rigBeads(town, p.Rig)
	if p.Worktree == "" {
		return p, nil
	}
	if err := p.checkBeads(); err != nil {
		return p, err
	}
	gitdir, err := p.worktreeGitdir()
	if err != nil {
		return p, err
	}
	p.gitdir = gitdir
	return p, nil
}

// IsRealDir says whether path, below town, is a directory reached
// through directories alone (Lstat on each component below the town).
func IsRealDir(town, path string) bool {
	rel, err := filepath.Rel(town, path)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") || filepath.IsAbs(rel) {
		return false
	}
	dir := town
	for _, c := range strings.Split(rel, string(filepath.Separator)) {
		if c == "." {
			continue
		}
		dir = filepath.Join(dir, c)
		if fi, err := os.Lstat(dir); err != nil || !fi.IsDir() {
			return false
		}
	}
	return true
}

// rigBeads is the rig's beads directory: <rig>/.beads, or the directory
// its redirect names (relative to the rig, or absolute) when that lies in
// the rig, as gt rig add writes it for a repository that tracks .beads
// (mayor/rig/.beads); the town's when the rig has none, as Gas Town then
// redirects its polecats there; "" when none is a real directory.
func rigBeads(town, rig string) string {
	beads := filepath.Join(rig, ".beads")
	if !IsRealDir(town, beads) {
		if townBeads := filepath.Join(town, ".beads"); IsRealDir(town, townBeads) {
			return townBeads
		}
		return ""
	}
	target, ok := readRedirect(filepath.Join(beads, "redirect"), rig)
	if !ok {
		return beads
	}
	if Inside(rig, target) && IsRealDir(town, target) {
		return target
	}
	return ""
}

// firstLine is the first line of the small regular file at path, trimmed,
// read without following a symlink; ok is false when it is missing,
// anything but a regular file, or over 4096 bytes.
func firstLine(path string) (string, bool) {
	fi, err := os.Lstat(path)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > 4096 {
		return "", false
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return "", false
	}
	line, _, _ := strings.Cut(string(data), "\n")
	return strings.TrimSpace(line), true
}

// readRedirect reads a beads redirect file (a path, relative to base or
// absolute, on its first line) without following a symlink; ok is false
// when there is none or it is not a regular file.
func readRedirect(path, base string) (string, bool) {
	line, ok := firstLine(path)
	if !ok || line == "" {
		return "", false
	}
	if !filepath.IsAbs(line) {
		line = filepath.Join(base, line)
	}
	return filepath.Clean(line), true
}

// Inside says whether path is dir or below it.
func Inside(dir, path string) bool {
	return path == dir || strings.HasPrefix(path, dir+string(filepath.Separator))
}

// worktreeBeadsRefused are what of beadsSteering (and bd's hooks) Gas
// Town never puts in a worktree's .beads: it writes only the redirect,
// removes metadata.json, and leaves config.yaml to the repository.
var worktreeBeadsRefused = []string{"hooks", ".env", "config.local.yaml", "config.json", "metadata.json", "dolt-server.port"}

// checkBeads refuses a worktree whose .beads is a symlink, holds what
// Gas Town never puts there, or redirects anywhere but to the rig's beads
// (gt follows the redirect for every bd it runs, bd for its database).
func (p Place) checkBeads() error {
	dir := filepath.Join(p.Worktree, ".beads")
	fi, err := os.Lstat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("reading the polecat's worktree: %w", err)
	case !fi.IsDir():
		return fmt.Errorf("the polecat's worktree has %s as a %s, not a directory: relayed commands would follow it; remove it on the host (gt prime makes it again)", dir, fi.Mode().Type())
	}
	for _, name := range worktreeBeadsRefused {
		if _, err := os.Lstat(filepath.Join(dir, name)); err == nil {
			return fmt.Errorf("the polecat's worktree has %s, which Gas Town never puts there and would steer relayed bd: remove it on the host", filepath.Join(dir, name))
		}
	}
	redirect := filepath.Join(dir, "redirect")
	if _, err := os.Lstat(redirect); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	target, ok := readRedirect(redirect, p.Worktree)
	if !ok || p.Beads == "" || target != p.Beads {
		return fmt.Errorf("the polecat's worktree has %s leading elsewhere than the rig's beads (%s): remove it on the host (gt prime writes Gas Town's)", redirect, orNone(p.Beads))
	}
	return nil
}

func orNone(s string) string {
	if s == "" {
		return "there are none"
	}
	return s
}

// worktreeGitdir is the worktree's own directory in the rig's bare
// repository, as git made it: <repo>/worktrees/<x>, a real directory,
// whose gitdir file names the worktree's .git, which names it back. A
// .git that is anything else (a polecat could have rewritten it) is
// refused: git in the worktree would read its configuration and hooks
// from where it points.
func (p Place) worktreeGitdir() (string, error) {
	dotgit := filepath.Join(p.Worktree, ".git")
	if _, err := os.Lstat(dotgit); errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	bad := fmt.Errorf("the polecat's worktree has a .git that does not lead into the rig's repository %s: git would run from elsewhere; remove the worktree on the host (gt polecat nuke)", p.Repo)
	line, ok := firstLine(dotgit)
	gitdir, prefixed := strings.CutPrefix(line, "gitdir: ")
	if !ok || !prefixed || !filepath.IsAbs(gitdir) || filepath.Clean(gitdir) != gitdir || filepath.Dir(gitdir) != filepath.Join(p.Repo, "worktrees") ||
		!IsRealDir(p.Town, gitdir) {
		return "", bad
	}
	// Only now, inside the repository, is a file there read.
	if back, ok := firstLine(filepath.Join(gitdir, "gitdir")); !ok || back != dotgit {
		return "", bad
	}
	return gitdir, nil
}

// Origins is the URLs of the rig's origin as its bare repository's
// configuration (Gas Town's, which no polecat can write) names them:
// remote "origin"'s url and pushurl, read as 'git remote add' writes them.
func (p Place) Origins() []string {
	data, err := os.ReadFile(filepath.Join(p.Repo, "config"))
	if err != nil {
		return nil
	}
	var urls []string
	section := ""
	for sc := bufio.NewScanner(bytes.NewReader(data)); sc.Scan(); {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "[") {
			section = line
			continue
		}
		key, value, ok := strings.Cut(line, "=")
		key, value = strings.ToLower(strings.TrimSpace(key)), strings.Trim(strings.TrimSpace(value), `"`)
		if ok && value != "" && section == `[remote "origin"]` && (key == "url" || key == "pushurl") {
			urls = append(urls, value)
		}
	}
	return urls
}
