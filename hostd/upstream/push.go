package upstream

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
)

// push sends the batch's branches as they are now to origin in one git
// push, deleting there those that no longer exist here, and returns the
// error of each branch that failed. Force is needed: polecats may
// force-push their own branches.
func (u *Queue) push(ctx context.Context, rig string, batch []item) map[string]error {
	repo := filepath.Join(u.town, rig, ".repo.git")
	args := []string{"-C", repo, "push", "--porcelain", "origin"}
	for _, it := range batch {
		ref := "refs/heads/" + it.Branch
		if exec.Command("git", "-C", repo, "rev-parse", "--verify", "--quiet", ref).Run() != nil {
			args = append(args, ":"+ref)
		} else {
			args = append(args, "+"+ref+":"+ref)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, u.timeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, "git", args...).CombinedOutput()
	results := porcelainResults(string(out))
	errs := map[string]error{}
	for _, it := range batch {
		ok, seen := results["refs/heads/"+it.Branch]
		switch {
		case seen && ok:
		case seen:
			errs[it.Branch] = fmt.Errorf("git push origin %s: rejected: %s", it.Branch, gitError(string(out)))
		case err != nil:
			errs[it.Branch] = fmt.Errorf("git push origin: %v: %s", err, gitError(string(out)))
		}
	}
	return errs
}

// porcelainResults reads git push --porcelain's per-ref lines
// ("<flag>\t<from>:<to>\t<summary>"): for each destination ref, whether
// it succeeded (any flag but '!').
func porcelainResults(out string) map[string]bool {
	res := map[string]bool{}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Split(line, "\t")
		if len(f) < 3 || len(f[0]) != 1 {
			continue
		}
		_, to, ok := strings.Cut(f[1], ":")
		if !ok {
			continue
		}
		res[to] = f[0] != "!"
	}
	return res
}

// gitError picks the line of git's output that says what went wrong: the
// first "fatal:" or "error:" line, else the last line.
func gitError(out string) string {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	for _, l := range lines {
		if strings.HasPrefix(l, "fatal:") || strings.HasPrefix(l, "error:") {
			return strings.TrimSpace(l)
		}
	}
	return strings.TrimSpace(lines[len(lines)-1])
}
