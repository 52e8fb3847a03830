package git

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// PushToCheckout is the hook git runs, when it exists, instead of its own
// update of a worktree where a pushed branch is checked out
// (receive.denyCurrentBranch=updateInstead). hostd installs it only with
// git.worktree_guard=skip; see RunPushToCheckout.
const PushToCheckout = "push-to-checkout"

// behindFile, in a worktree's administrative directory, records that
// hostd left the worktree behind its branch: the tree its index and files
// are at, and the commit the branch was pushed to then. While the branch
// is still at that commit, that tree, not the commit's, is what the
// worktree must match to be updated.
const behindFile = "sidecar-worktree-behind"

// worktreeRecord is what the pre-receive hook did about one pushed ref
// checked out in one host worktree, for hostd to log and count and for
// push-to-checkout to act on: refused the push (GuardRefuse) or let it
// land without updating the worktree (GuardSkip), for paths.
type worktreeRecord struct {
	Action   string   `json:"action"`
	Ref      string   `json:"ref"`
	Commit   string   `json:"commit"`
	Worktree string   `json:"worktree"`
	Admin    string   `json:"admin"`
	Paths    []string `json:"paths"` // the first few, each with why
	More     int      `json:"more"`  // how many more
}

// writeRecords appends recs to the file at path, one JSON line each.
func writeRecords(path string, recs []worktreeRecord) error {
	if len(recs) == 0 {
		return nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("recording the host worktree's guard: %w", err)
	}
	enc := json.NewEncoder(f)
	for _, r := range recs {
		if err := enc.Encode(r); err != nil {
			f.Close()
			return fmt.Errorf("recording the host worktree's guard: %w", err)
		}
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("recording the host worktree's guard: %w", err)
	}
	return nil
}

// readRecords reads the records the pre-receive hook wrote to path; none
// when it wrote none.
func readRecords(path string) ([]worktreeRecord, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the host worktree guard's records: %w", err)
	}
	defer f.Close()
	var recs []worktreeRecord
	dec := json.NewDecoder(bufio.NewReader(f))
	for {
		var r worktreeRecord
		err := dec.Decode(&r)
		if errors.Is(err, io.EOF) {
			return recs, nil
		}
		if err != nil {
			return recs, fmt.Errorf("reading the host worktree guard's records: %w", err)
		}
		recs = append(recs, r)
	}
}

// RunPushToCheckout is the push-to-checkout hook (git.worktree_guard=skip):
// git gives it the pushed commit, the worktree's administrative directory
// (GIT_DIR) and directory (GIT_WORK_TREE), and moves the branch once it
// exits 0. It refuses, as git's own update does and with git's words, a
// worktree whose files or index differ from its HEAD (or from the tree
// hostd left it at, see behindFile). Then, if the pre-receive hook
// recorded the commit as one to skip in this worktree, it leaves the
// worktree as it is and records it as behind; else it checks the commit
// out there as git would (read-tree -u -m) and forgets that it was
// behind. Without the pre-receive hook's records it refuses. It returns
// the exit status.
func RunPushToCheckout(args []string, stderr io.Writer) int {
	wt := worktree{admin: os.Getenv("GIT_DIR"), dir: os.Getenv("GIT_WORK_TREE")}
	if len(args) != 1 || wt.admin == "" || wt.dir == "" {
		fmt.Fprintln(stderr, "push-to-checkout: run by git receive-pack with the pushed commit, GIT_DIR and GIT_WORK_TREE")
		return 1
	}
	commit := args[0]
	recordPath, set := os.LookupEnv(WorktreeRecordEnv)
	if !set {
		fmt.Fprintln(stderr, "push-to-checkout: no record of hostd's pre-receive hook; not updating the worktree")
		return 1
	}
	recs, err := readRecords(recordPath)
	if err != nil {
		fmt.Fprintf(stderr, "push-to-checkout: %v\n", err)
		return 1
	}
	base, err := worktreeBase(wt)
	if err == nil {
		err = worktreeReady(wt, base)
	}
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	if skipped(recs, wt, commit) {
		if err := markBehind(wt, base, commit); err != nil {
			fmt.Fprintln(stderr, err)
			return 1
		}
		return 0
	}
	if out, err := worktreeGit(wt, "read-tree", "-u", "-m", commit).CombinedOutput(); err != nil {
		fmt.Fprintf(stderr, "could not update working tree to new HEAD: %v: %s\n", err, strings.TrimSpace(string(out)))
		return 1
	}
	if err := os.Remove(filepath.Join(wt.admin, behindFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
		fmt.Fprintf(stderr, "push-to-checkout: the worktree is updated, but forgetting it was behind: %v\n", err)
	}
	return 0
}

// skipped reports whether recs say to leave wt as it is for commit.
func skipped(recs []worktreeRecord, wt worktree, commit string) bool {
	here, err := os.Stat(wt.admin)
	if err != nil {
		return false
	}
	for _, r := range recs {
		if r.Action != GuardSkip || r.Commit != commit {
			continue
		}
		if there, err := os.Stat(r.Admin); err == nil && os.SameFile(here, there) {
			return true
		}
	}
	return false
}

// worktreeBase is what wt's index and files must match for a push to
// update it: the tree hostd left it at when its branch is still at the
// commit hostd skipped (behindFile), else its HEAD, else (an unborn
// branch) the empty tree.
func worktreeBase(wt worktree) (string, error) {
	head, err := worktreeGit(wt, "rev-parse", "-q", "--verify", "HEAD").Output()
	if err != nil {
		empty, err := worktreeGit(wt, "hash-object", "-t", "tree", "--stdin").Output()
		if err != nil {
			return "", fmt.Errorf("push-to-checkout: naming the empty tree: %w", err)
		}
		return strings.TrimSpace(string(empty)), nil
	}
	b, err := os.ReadFile(filepath.Join(wt.admin, behindFile))
	if f := strings.Fields(string(b)); err == nil && len(f) == 2 && f[1] == strings.TrimSpace(string(head)) {
		return f[0], nil
	}
	return "HEAD", nil
}

// worktreeReady refuses wt, in git's words (receive-pack's push_to_deploy),
// when its files differ from its index or its index from base.
func worktreeReady(wt worktree, base string) error {
	if worktreeGit(wt, "update-index", "-q", "--ignore-submodules", "--refresh").Run() != nil {
		return errors.New("up-to-date check failed")
	}
	if worktreeGit(wt, "diff-files", "--quiet", "--ignore-submodules", "--").Run() != nil {
		return errors.New("working directory has unstaged changes")
	}
	if worktreeGit(wt, "diff-index", "--quiet", "--cached", "--ignore-submodules", base, "--").Run() != nil {
		return errors.New("working directory has staged changes")
	}
	return nil
}

// markBehind records that wt stays at base's tree while its branch moves
// to commit.
func markBehind(wt worktree, base, commit string) error {
	tree, err := worktreeGit(wt, "rev-parse", "--verify", base+"^{tree}").Output()
	if err != nil {
		return fmt.Errorf("push-to-checkout: naming the tree the worktree stays at: %w", err)
	}
	line := strings.TrimSpace(string(tree)) + " " + commit + "\n"
	if err := os.WriteFile(filepath.Join(wt.admin, behindFile), []byte(line), 0o644); err != nil {
		return fmt.Errorf("push-to-checkout: recording that the worktree stays behind: %w", err)
	}
	return nil
}
