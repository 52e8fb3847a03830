package git

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// The settings the checkout bounds come from, as the pre-receive hook
// names them to the polecat.
const (
	maxCheckoutSizeSetting  = "git.max_checkout_size"
	maxCheckoutFilesSetting = "git.max_checkout_files"
)

// checkoutBounds bound what one push may make git write into a worktree of
// the repository in which the pushed branch is checked out
// (receive.denyCurrentBranch=updateInstead writes the branch's new tree
// there): size the bytes of its files, files its files, links and
// directories.
type checkoutBounds struct {
	size, files int64
}

// checkoutBoundsFromEnv reads the bounds hostd passes the hook.
func checkoutBoundsFromEnv() (checkoutBounds, error) {
	var b checkoutBounds
	for _, v := range []struct {
		env string
		to  *int64
	}{{MaxCheckoutSizeEnv, &b.size}, {MaxCheckoutFilesEnv, &b.files}} {
		n, err := strconv.ParseInt(os.Getenv(v.env), 10, 64)
		if err != nil || n <= 0 {
			return checkoutBounds{}, fmt.Errorf("%s is %q, want a number above 0", v.env, os.Getenv(v.env))
		}
		*v.to = n
	}
	return b, nil
}

// worktree is a working tree of the repository the hook runs in: admin is
// its administrative directory (the repository itself for the main
// worktree, worktrees/<id> for a linked one), dir the directory checked
// out there, "" for a bare repository's main worktree, which has none,
// and for a linked worktree whose record git would not read either.
type worktree struct {
	admin, dir string
}

// checkedOutWorktrees maps each ref checked out in the repository at
// gitDir (a bare one's HEAD, which git skips, only makes this map larger)
// and in each of its linked worktrees, with the branches a worktree is
// rebasing or bisecting, which receive-pack treats as checked out there
// too, to the worktrees it is checked out in. A repository without linked
// worktrees has none to read beyond its HEAD.
func checkedOutWorktrees(gitDir string) (map[string][]worktree, error) {
	gitDir, err := filepath.Abs(gitDir)
	if err != nil {
		return nil, fmt.Errorf("finding the repository: %w", err)
	}
	main, err := mainWorktree(gitDir)
	if err != nil {
		return nil, err
	}
	wts := []worktree{main}
	entries, err := os.ReadDir(filepath.Join(gitDir, "worktrees"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("listing the repository's worktrees: %w", err)
	}
	for _, e := range entries {
		wt := worktree{admin: filepath.Join(gitDir, "worktrees", e.Name())}
		if b, err := os.ReadFile(filepath.Join(wt.admin, "gitdir")); err == nil && filepath.IsAbs(strings.TrimSpace(string(b))) {
			wt.dir = filepath.Dir(strings.TrimSpace(string(b))) // gitdir names <dir>/.git
		}
		wts = append(wts, wt)
	}
	refs := map[string][]worktree{}
	for _, wt := range wts {
		for _, name := range []string{"HEAD", "rebase-merge/head-name", "rebase-apply/head-name", "BISECT_START"} {
			b, err := os.ReadFile(filepath.Join(wt.admin, name))
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("reading %s of worktree %s: %w", name, filepath.Base(wt.admin), err)
			}
			s := strings.TrimSpace(string(b))
			switch name {
			case "HEAD":
				var ok bool
				if s, ok = strings.CutPrefix(s, "ref: "); !ok {
					continue // detached
				}
			case "BISECT_START": // a branch's short name, or a commit id that names no branch
				s = "refs/heads/" + s
			}
			if !slices.Contains(refs[s], wt) {
				refs[s] = append(refs[s], wt)
			}
		}
	}
	return refs, nil
}

// mainWorktree is the repository at gitDir as its main worktree: with no
// directory when it is bare (Gas Town's .repo.git), else the directory
// its .git is in.
func mainWorktree(gitDir string) (worktree, error) {
	out, err := exec.Command("git", "--git-dir="+gitDir, "rev-parse", "--is-bare-repository").Output()
	if err != nil {
		return worktree{}, fmt.Errorf("asking whether the repository is bare: %w", err)
	}
	if strings.TrimSpace(string(out)) == "true" {
		return worktree{admin: gitDir}, nil
	}
	return worktree{admin: gitDir, dir: filepath.Dir(gitDir)}, nil
}

// over reports whether checking out commit's tree would go over b, and if
// so which setting and why, in words for the pushing polecat. It lists the
// tree (git ls-tree, in the quarantine the hook runs in, where the pushed
// objects are readable), stopping as soon as either bound is passed, and
// weighs the blob sizes by how much the tree's own .gitattributes may make
// checkout grow them (see attributeGrowth). visit, when not nil, is given
// each entry but trees as it is listed, until then.
func (b checkoutBounds) over(commit string, visit func(mode, oid, path string)) (setting, why string, err error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", "ls-tree", "-r", "-t", "-l", "-z", commit)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return "", "", fmt.Errorf("listing the tree of %s: %w", commit, err)
	}
	var stderr strings.Builder
	cmd.Stderr = &limitedWriter{w: &stderr, n: 1024}
	if err := cmd.Start(); err != nil {
		return "", "", fmt.Errorf("listing the tree of %s: %w", commit, err)
	}
	stop := func() { cancel(); _ = cmd.Wait() } // git killed once the answer is known
	var size, files int64
	attributes := false
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	sc.Split(splitNUL)
	for sc.Scan() {
		meta, path, ok := bytes.Cut(sc.Bytes(), []byte("\t"))
		f := strings.Fields(string(meta))
		if !ok || len(f) != 4 {
			stop()
			return "", "", fmt.Errorf("listing the tree of %s: unexpected line %q", commit, truncate(sc.Text()))
		}
		files++
		if visit != nil && f[1] != "tree" {
			visit(f[0], f[2], string(path))
		}
		if n, err := strconv.ParseInt(f[3], 10, 64); err == nil { // "-" for trees and submodules
			size += n
		}
		if base := path[bytes.LastIndexByte(path, '/')+1:]; strings.EqualFold(string(base), ".gitattributes") { // in any case: a host's file system may ignore it
			attributes = true
		}
		if files > b.files {
			stop()
			return maxCheckoutFilesSetting, fmt.Sprintf("its tree has more than %d files, links and directories", b.files), nil
		}
		if size > b.size {
			stop()
			return maxCheckoutSizeSetting, fmt.Sprintf("its tree's files hold more than %d bytes", b.size), nil
		}
	}
	if err := sc.Err(); err != nil {
		stop()
		return "", "", fmt.Errorf("listing the tree of %s: %w", commit, err)
	}
	if err := cmd.Wait(); err != nil {
		return "", "", fmt.Errorf("listing the tree of %s: %w: %s", commit, err, strings.TrimSpace(stderr.String()))
	}
	if !attributes {
		return "", "", nil
	}
	growth, words, err := attributeGrowth(commit)
	if err != nil {
		return "", "", err
	}
	if size > b.size/growth {
		return maxCheckoutSizeSetting, fmt.Sprintf("its tree's files hold %d bytes, and its .gitattributes (%s) let checkout write up to %d times that, more than %d bytes", size, strings.Join(words, ", "), growth, b.size), nil
	}
	return "", "", nil
}

// splitNUL splits git's -z output at each NUL.
func splitNUL(data []byte, atEOF bool) (advance int, token []byte, err error) {
	if i := bytes.IndexByte(data, 0); i >= 0 {
		return i + 1, data[:i], nil
	}
	if atEOF && len(data) > 0 {
		return len(data), data, nil
	}
	return 0, nil, nil
}

// attributeGrowth is how many times its blobs' sizes git's checkout may
// write for commit's tree, at worst, because of attributes its
// .gitattributes files name (in any form: set, unset, in a macro, even in
// a comment, which only overcounts), and those attributes. ident turns a
// 4-byte "$Id$" into "$Id: <object id> $" (47 bytes, 71 in a SHA-256
// repository), eol=crlf (and the older crlf) a 1-byte newline into 2
// bytes, and working-tree-encoding re-encodes the result, UTF-8 to UTF-32
// at most 4 bytes a byte. Filter drivers are not counted: a tree can only
// name those the host's configuration defines.
func attributeGrowth(commit string) (int64, []string, error) {
	var words []string
	for _, w := range []string{"ident", "crlf", "working-tree-encoding"} {
		err := exec.Command("git", "grep", "-q", "-w", "-F", "-e", w, commit, "--", ":(glob,icase)**/.gitattributes").Run()
		var exit *exec.ExitError
		switch {
		case errors.As(err, &exit) && exit.ExitCode() == 1:
			continue // not named
		case err != nil:
			return 0, nil, fmt.Errorf("reading the .gitattributes of %s: %w", commit, err)
		}
		words = append(words, w)
	}
	growth := int64(1)
	switch {
	case slices.Contains(words, "ident"): // ident and eol grow different bytes
		growth = 18
	case slices.Contains(words, "crlf"):
		growth = 2
	}
	if slices.Contains(words, "working-tree-encoding") { // re-encodes what ident and eol wrote
		growth *= 4
	}
	return growth, words, nil
}
