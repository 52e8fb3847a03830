package worktree

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"strings"

	"github.com/polecat-sidecar/sidecar/hostd/git/internal/limited"
)

// The settings the checkout bounds come from, as the pre-receive hook
// names them to the polecat.
const (
	maxCheckoutSizeSetting  = "git.max_checkout_size"
	maxCheckoutFilesSetting = "git.max_checkout_files"
)

// Bounds bound what one push may make git write into a worktree of
// the repository in which the pushed branch is checked out
// (receive.denyCurrentBranch=updateInstead writes the branch's new tree
// there): Size the bytes of its files, Files its files, links and
// directories.
type Bounds struct {
	Size, Files int64
}

// Over reports whether checking out commit's tree would go over b, and if
// so which setting and why, in words for the pushing polecat. It lists the
// tree (git ls-tree, in the quarantine the hook runs in, where the pushed
// objects are readable), stopping as soon as either bound is passed, and
// weighs the blob sizes by how much the tree's own .gitattributes may make
// checkout grow them (see attributeGrowth). visit, when not nil, is given
// each entry but trees as it is listed, until then.
func (b Bounds) Over(commit string, visit func(mode, oid, path string)) (setting, why string, err error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", "ls-tree", "-r", "-t", "-l", "-z", commit)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return "", "", fmt.Errorf("listing the tree of %s: %w", commit, err)
	}
	var stderr strings.Builder
	cmd.Stderr = &limited.Writer{W: &stderr, N: 1024}
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
			return "", "", fmt.Errorf("listing the tree of %s: unexpected line %q", commit, limited.Truncate(sc.Text()))
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
		if files > b.Files {
			stop()
			return maxCheckoutFilesSetting, fmt.Sprintf("its tree has more than %d files, links and directories", b.Files), nil
		}
		if size > b.Size {
			stop()
			return maxCheckoutSizeSetting, fmt.Sprintf("its tree's files hold more than %d bytes", b.Size), nil
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
	if size > b.Size/growth {
		return maxCheckoutSizeSetting, fmt.Sprintf("its tree's files hold %d bytes, and its .gitattributes (%s) let checkout write up to %d times that, more than %d bytes", size, strings.Join(words, ", "), growth, b.Size), nil
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
// write for commit's tree at worst, for the attributes its .gitattributes
// name in any form (a mere mention overcounts), and those attributes:
// ident 18 times, crlf 2, working-tree-encoding 4 times either. Filter
// drivers are not counted: a tree names only those the host defines.
// docs/security.md ("Other polecats' branches, and main") says why.
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
