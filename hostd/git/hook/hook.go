// Package hook is hostd as git's hooks inside receive-pack: pre-receive
// (a push only of the pushing polecat's own branches, then each branch
// checked out in a host worktree judged by hostd/git/worktree),
// post-receive (what landed recorded for hostd), and push-to-checkout
// (with git.worktree_guard=skip, a worktree left behind rather than
// updated); and the contract with hostd's git service that runs them:
// their names, the environment it sets and the records they leave it.
package hook

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"

	"github.com/polecat-sidecar/sidecar/hostd/git/branch"
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

// What git.worktree_guard does with a push that would change what host
// processes run or follow in a host worktree where the pushed branch is
// checked out.
const (
	// GuardRefuse refuses the whole push, naming the paths.
	GuardRefuse = "refuse"
	// GuardSkip lets the push land and leaves the host worktree as it
	// was, the reason logged.
	GuardSkip = "skip"
)

// The setting the guard comes from, as the hooks name it to the polecat.
const worktreeGuardSetting = "git.worktree_guard"

// RunPreReceive is the pre-receive hook: it refuses the whole push unless
// every updated ref is one of the pushing polecat's own branches
// (branch.Policy) and none is a symbolic ref (a push through one pointing
// at main would move main), then unless each branch checked out in a host
// worktree passes checkCheckouts. Without an identity or the rig's branch
// patterns it refuses everything. It returns the exit status.
func RunPreReceive(stdin io.Reader, stderr io.Writer) int {
	id, err := wire.ParseIdentity(os.Getenv(IdentityEnv))
	if err != nil {
		fmt.Fprintln(stderr, "push refused: no polecat identity (pushes are accepted only through hostd, from a polecat's tunnel)")
		return 1
	}
	raw, set := os.LookupEnv(PatternsEnv)
	policy, err := branch.ParsePatterns(splitList(raw))
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
