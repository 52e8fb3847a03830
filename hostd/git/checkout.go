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

// checkedOutBranches is the set of refs checked out in the repository at
// gitDir (a bare one's HEAD, which git skips, only makes this set larger)
// and in each of its linked worktrees, with the branches a worktree is
// rebasing or bisecting, which receive-pack treats as checked out there
// too. A repository without linked worktrees has none to read beyond its
// HEAD.
func checkedOutBranches(gitDir string) (map[string]bool, error) {
	admin := []string{gitDir}
	entries, err := os.ReadDir(filepath.Join(gitDir, "worktrees"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("listing the repository's worktrees: %w", err)
	}
	for _, e := range entries {
		admin = append(admin, filepath.Join(gitDir, "worktrees", e.Name()))
	}
	refs := map[string]bool{}
	for _, dir := range admin {
		for _, name := range []string{"HEAD", "rebase-merge/head-name", "rebase-apply/head-name", "BISECT_START"} {
			b, err := os.ReadFile(filepath.Join(dir, name))
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("reading %s of worktree %s: %w", name, filepath.Base(dir), err)
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
			refs[s] = true
		}
	}
	return refs, nil
}

// over reports whether checking out commit's tree would go over b, and if
// so which setting and why, in words for the pushing polecat. It lists the
// tree (git ls-tree, in the quarantine the hook runs in, where the pushed
// objects are readable), stopping as soon as either bound is passed, and
// weighs the blob sizes by how much the tree's own .gitattributes may make
// checkout grow them (see attributeGrowth).
func (b checkoutBounds) over(commit string) (setting, why string, err error) {
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
