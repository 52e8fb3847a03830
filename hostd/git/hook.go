package git

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"

	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// Hook names: hostd is installed under these names in its hooks directory
// and acts as the hook when invoked by one of them.
const (
	PreReceive  = "pre-receive"
	PostReceive = "post-receive"
)

// Environment the receive-pack hooks read, set by hostd only.
const (
	// IdentityEnv carries the pushing polecat's <rig>/<name>.
	IdentityEnv = "SIDECAR_PUSH_IDENTITY"
	// LandedEnv names the file post-receive appends landed updates to.
	LandedEnv = "SIDECAR_LANDED_FILE"
	// PolecatsEnv lists, comma-separated, every polecat name known in the
	// pushing polecat's rig: branch ownership goes to the longest match.
	PolecatsEnv = "SIDECAR_RIG_POLECATS"
	// PatternsEnv lists, comma-separated, the rig's branch patterns.
	PatternsEnv = "SIDECAR_BRANCH_PATTERNS"
	// MaxCheckoutSizeEnv and MaxCheckoutFilesEnv carry git.max_checkout_size
	// and git.max_checkout_files: what a push may make git write into a
	// worktree where the pushed branch is checked out.
	MaxCheckoutSizeEnv  = "SIDECAR_MAX_CHECKOUT_SIZE"
	MaxCheckoutFilesEnv = "SIDECAR_MAX_CHECKOUT_FILES"
	// LimitEnv names the file pre-receive writes the setting to when it
	// refuses a push for going over one, for hostd to count.
	LimitEnv = "SIDECAR_LIMIT_FILE"
	// WorktreeGuardEnv carries git.worktree_guard (GuardRefuse or
	// GuardSkip): what a push gets that would change, in a host worktree
	// where its branch is checked out, what host processes run or follow.
	WorktreeGuardEnv = "SIDECAR_WORKTREE_GUARD"
	// WorktreeRecordEnv names the file pre-receive records there what the
	// guard refused or skipped, for hostd to log and for push-to-checkout
	// to skip.
	WorktreeRecordEnv = "SIDECAR_WORKTREE_RECORD"
)

// RunPreReceive is the pre-receive hook: it refuses the whole push unless
// every updated ref is one of the pushing polecat's own branches (see
// BranchPolicy) and none is a symbolic ref (pushing through a symref that
// points at main would move main), and then unless each of those checked
// out in a worktree of the repository, which the push would update
// (receive.denyCurrentBranch=updateInstead), has a tree within the checkout
// bounds that changes there nothing host processes run or follow (see
// checkCheckouts). Without an identity or the rig's branch patterns it
// refuses everything. It returns the exit status.
func RunPreReceive(stdin io.Reader, stderr io.Writer) int {
	id, err := wire.ParseIdentity(os.Getenv(IdentityEnv))
	if err != nil {
		fmt.Fprintln(stderr, "push refused: no polecat identity (pushes are accepted only through hostd, from a polecat's tunnel)")
		return 1
	}
	raw, set := os.LookupEnv(PatternsEnv)
	policy, err := ParseBranchPatterns(splitList(raw))
	if !set || err != nil {
		fmt.Fprintf(stderr, "push refused: no valid branch patterns from hostd (%v)\n", err)
		return 1
	}
	known := splitList(os.Getenv(PolecatsEnv))
	refused := 0
	var updates []update
	sc := bufio.NewScanner(stdin)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 3 {
			fmt.Fprintf(stderr, "push refused: malformed update line from git: %q\n", sc.Text())
			return 1
		}
		ref := f[2]
		updates = append(updates, update{newID: f[1], ref: ref})
		ok, why := policy.Allowed(id, ref, known)
		if target, sym := symbolicRef(ref); ok && sym {
			ok, why = false, "it is a symbolic ref to "+target
		}
		if !ok {
			refused++
			fmt.Fprintf(stderr, "refusing %s: %s; %s may push only %s\n", ref, why, id, policy.Describe(id.Name))
		}
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintf(stderr, "push refused: reading updates: %v\n", err)
		return 1
	}
	if refused > 0 {
		fmt.Fprintf(stderr, "push refused: %d ref(s) not allowed; nothing was changed\n", refused)
		return 1
	}
	return checkCheckouts(updates, stderr)
}

// update is one line of what pre-receive reads: a ref and its new value.
type update struct {
	newID, ref string
}

// checkCheckouts refuses the push when one of updates is to a branch
// checked out in a worktree of the repository (Gas Town's
// <town>/<rig>/polecats/<name>/<rig> is one of .repo.git), where git would
// write its new tree once this hook accepts, and that tree is over the
// bounds hostd passed (max_push_size bounds only the compressed pack: a
// 64 MiB pack of zeros checks out to some 64 GiB) or would change what
// host processes run or follow there (see guard). With
// git.worktree_guard=skip the latter lands instead, recorded for
// push-to-checkout to leave the worktree as it is; and a worktree that
// cannot take a push at all (the host's own changes) is refused here, in
// git's words, since push-to-checkout's refusal would reach the polecat
// only as "push-to-checkout hook declined". Refs checked out nowhere, and
// deletions (git refuses to delete a checked-out branch), are not listed.
// It returns the exit status.
func checkCheckouts(updates []update, stderr io.Writer) int {
	gitDir := os.Getenv("GIT_DIR") // the hook runs in the repository, and git sets it
	if gitDir == "" {
		gitDir = "."
	}
	checked, err := checkedOutWorktrees(gitDir)
	if err != nil {
		fmt.Fprintf(stderr, "push refused: %v\n", err)
		return 1
	}
	var bounds *checkoutBounds
	mode := ""
	var recs []worktreeRecord
	for _, u := range updates {
		wts := checked[u.ref]
		if len(wts) == 0 || strings.Trim(u.newID, "0") == "" {
			continue
		}
		if bounds == nil {
			b, err := checkoutBoundsFromEnv()
			if err != nil {
				fmt.Fprintf(stderr, "push refused: %s is checked out in a host worktree and hostd gave no valid bounds for it (%v)\n", u.ref, err)
				return 1
			}
			bounds = &b
			if mode = os.Getenv(WorktreeGuardEnv); mode != GuardRefuse && mode != GuardSkip {
				fmt.Fprintf(stderr, "push refused: %s is checked out in a host worktree and hostd gave no valid %s (%s is %q)\n", u.ref, worktreeGuardSetting, WorktreeGuardEnv, mode)
				return 1
			}
		}
		g, err := newGuard(wts)
		if err != nil {
			fmt.Fprintf(stderr, "push refused: %s is checked out in a host worktree: %v\n", u.ref, err)
			return 1
		}
		setting, why, err := bounds.over(u.newID, g.visit)
		if err == nil && setting == "" {
			err = g.finish()
		}
		if err != nil {
			fmt.Fprintf(stderr, "push refused: %s is checked out in a host worktree: %v\n", u.ref, err)
			return 1
		}
		if setting != "" {
			fmt.Fprintf(stderr, "refusing %s: it is checked out in a host worktree, which this push would update, and %s, over %s\n", u.ref, why, setting)
			fmt.Fprintf(stderr, "push refused: over %s; nothing was changed\n", setting)
			recordLimit(setting)
			return 1
		}
		for _, wt := range wts {
			if wt.dir == "" {
				continue
			}
			rec, err := judgeWorktree(g, wt, u, mode)
			if err != nil {
				fmt.Fprintf(stderr, "push refused: %s is checked out in a host worktree: %v\n", u.ref, err)
				return 1
			}
			if rec == nil {
				continue
			}
			recs = append(recs, *rec)
			if mode == GuardRefuse {
				fmt.Fprintf(stderr, "refusing %s: it is checked out in a host worktree, which this push would update, and there it would change what host processes run or follow (%s=%s):\n%s", u.ref, worktreeGuardSetting, mode, listPaths(*rec))
				fmt.Fprintf(stderr, "push refused: nothing was changed. A branch of yours checked out nowhere on the host takes these commits.\n")
				return finishRecords(recs, 1, stderr)
			}
			fmt.Fprintf(stderr, "%s lands, but its host worktree is not updated (%s=%s): there this push would change what host processes run or follow:\n%s", u.ref, worktreeGuardSetting, mode, listPaths(*rec))
		}
	}
	return finishRecords(recs, 0, stderr)
}

// maxListed bounds the paths one record lists.
const maxListed = 10

// judgeWorktree judges u's commit, which g has been fed, for the worktree
// wt; with GuardSkip it first refuses a worktree that cannot take a push
// at all, as push-to-checkout would, with git's words. It returns the
// record of what the guard refused or skipped, nil when it found nothing.
func judgeWorktree(g *guard, wt worktree, u update, mode string) (*worktreeRecord, error) {
	if mode == GuardSkip {
		base, err := worktreeBase(wt)
		if err == nil {
			err = worktreeReady(wt, base)
		}
		if err != nil {
			return nil, err
		}
	}
	vs, err := g.judge(wt)
	if err != nil || len(vs) == 0 {
		return nil, err
	}
	rec := &worktreeRecord{Action: mode, Ref: u.ref, Commit: u.newID, Worktree: wt.dir, Admin: wt.admin}
	for i, v := range vs {
		if i == maxListed {
			rec.More = len(vs) - i
			break
		}
		rec.Paths = append(rec.Paths, quote(v.path)+": "+v.why)
	}
	return rec, nil
}

// listPaths is rec's paths, one a line, for the pushing polecat.
func listPaths(rec worktreeRecord) string {
	var b strings.Builder
	for _, p := range rec.Paths {
		fmt.Fprintf(&b, "  %s\n", p)
	}
	if rec.More > 0 {
		fmt.Fprintf(&b, "  and %d more\n", rec.More)
	}
	return b.String()
}

// finishRecords writes recs to the file hostd named and returns code; a
// push whose records cannot be written is refused, since push-to-checkout
// skips only what they list.
func finishRecords(recs []worktreeRecord, code int, stderr io.Writer) int {
	if err := writeRecords(os.Getenv(WorktreeRecordEnv), recs); err != nil {
		fmt.Fprintf(stderr, "push refused: %v\n", err)
		return 1
	}
	return code
}

// recordLimit writes the setting a push went over to the file hostd named,
// if it named one.
func recordLimit(setting string) {
	if path := os.Getenv(LimitEnv); path != "" {
		_ = os.WriteFile(path, []byte(setting+"\n"), 0o600)
	}
}

// splitList splits a comma-separated list, dropping empty entries.
func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f != "" {
			out = append(out, f)
		}
	}
	return out
}

// symbolicRef reports whether ref is a symbolic ref in the repository the
// hook runs in, and its target. It asks about the one ref because listing
// refs skips symbolic refs whose target does not exist yet, and a push
// through one of those would create its target.
func symbolicRef(ref string) (target string, ok bool) {
	out, err := exec.Command("git", "symbolic-ref", "-q", ref).Output()
	if err != nil {
		return "", false
	}
	return strings.TrimSpace(string(out)), true
}

// RunPostReceive is the post-receive hook: it records the updates that
// landed for hostd (which queues them upstream). It never fails the push.
func RunPostReceive(stdin io.Reader) int {
	path := os.Getenv(LandedEnv)
	if path == "" {
		_, _ = io.Copy(io.Discard, stdin)
		return 0
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return 0
	}
	defer f.Close()
	_, _ = io.Copy(f, stdin)
	return 0
}
