package sandbox

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/polecat-sidecar/sidecar/agent/git"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// prepare readies rig's clone for a session: it clones the rig through
// the agent's git port, on req.Branch, unless a clone is there, sets its
// git identity (which a stash needs), and brings a clone that was there
// to req.Branch (checkout).
func (s *Service) prepare(ctx context.Context, rig string, req wire.SandboxRequest) (wire.SandboxClone, error) {
	dir := s.clone(rig)
	c := wire.SandboxClone{Dir: dir}
	_, err := os.Stat(filepath.Join(dir, ".git"))
	switch {
	case errors.Is(err, fs.ErrNotExist) && s.cfg.GitAddr == "":
		return c, errors.New("no clone, and no git port to clone the rig through (gt-agent up's --git-listen is empty)")
	case errors.Is(err, fs.ErrNotExist):
		args := []string{"clone", "-q"}
		if req.Branch != "" {
			args = append(args, "-b", req.Branch)
		}
		if _, err := runGit(ctx, "", append(args, "--", git.Origin(s.cfg.GitAddr, rig), dir)...); err != nil {
			return c, fmt.Errorf("cloning %s: %w", rig, err)
		}
		c.Cloned, c.To = true, req.Branch
		s.cfg.Logger.Info("sandbox: cloned the rig", "dir", dir, "branch", req.Branch)
	case err != nil:
		return c, fmt.Errorf("looking for the clone: %w", err)
	}
	for _, kv := range [][2]string{{"user.name", req.Name}, {"user.email", req.Email}} {
		if kv[1] == "" {
			continue
		}
		if _, err := runGit(ctx, dir, "config", kv[0], kv[1]); err != nil {
			return c, fmt.Errorf("setting the clone's git identity (%s): %w", kv[0], err)
		}
	}
	if c.Cloned {
		return c, nil
	}
	return checkout(ctx, dir, req.Branch)
}

// runGit runs git in dir ("" for the agent's own) and returns its output,
// trimmed; an error carries what git said.
func runGit(ctx context.Context, dir string, args ...string) (string, error) {
	if dir != "" {
		args = append([]string{"-C", dir}, args...)
	}
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0")
	out, err := cmd.Output() // its error output kept by exec, bounded
	if ee, ok := errors.AsType[*exec.ExitError](err); ok {
		err = fmt.Errorf("git %s: %w: %s", args[0], err, strings.Join(strings.Fields(string(ee.Stderr)), " "))
	}
	return strings.TrimSpace(string(out)), err
}

// checkout brings the clone in dir to branch, the one Gas Town checked out
// in the polecat's worktree (a reused polecat gets a new branch there
// while its sandbox stays), fetched from the rig. Uncommitted work goes
// into a stash entry, never into the new branch; commits on the old
// branch stay on it; a detached HEAD's that origin lacks go on a branch
// of their own. A branch of "" (the worktree's HEAD detached) leaves the
// clone as it is. docs/migrating.md: "A reused polecat works on its new branch".
func checkout(ctx context.Context, dir, branch string) (wire.SandboxClone, error) {
	git := func(args ...string) (string, error) { return runGit(ctx, dir, args...) }
	from, _ := git("symbolic-ref", "-q", "--short", "HEAD")
	if from != "" && !isBranch(ctx, from) {
		return wire.SandboxClone{Dir: dir}, errors.New("the clone's HEAD names no branch git takes")
	}
	sw := wire.SandboxClone{Dir: dir, From: from, To: from}
	if branch == "" || branch == from {
		return sw, nil
	}
	if !isBranch(ctx, branch) {
		return sw, fmt.Errorf("the worktree's branch %q is not a branch name git takes", branch)
	}
	local, remote := "refs/heads/"+branch, "refs/remotes/origin/"+branch
	if _, err := git("fetch", "-q", "origin", "+"+local+":"+remote); err != nil {
		return sw, fmt.Errorf("fetching %s from the rig: %w", branch, err)
	}
	if n, err := git("rev-list", "--count", "HEAD", "--not", "--remotes=origin"); err == nil {
		fmt.Sscan(n, &sw.Unpushed)
	}
	if from == "" && sw.Unpushed > 0 {
		// A detached HEAD's commits would be left to the reflog alone.
		head, err := git("rev-parse", "--verify", "HEAD")
		if err != nil || !isHex(head) {
			return sw, fmt.Errorf("naming the detached HEAD's commits: %w", err)
		}
		sw.Kept = "polecat-sidecar/detached-" + head[:12]
		if _, err := git("branch", "-f", sw.Kept, head); err != nil {
			return sw, fmt.Errorf("keeping the detached HEAD's commits on a branch: %w", err)
		}
	}
	if dirty, err := git("status", "--porcelain", "--untracked-files=all"); err != nil {
		return sw, fmt.Errorf("looking for uncommitted work: %w", err)
	} else if dirty != "" {
		msg := "polecat-sidecar: uncommitted work on " + cmp.Or(from, "a detached HEAD") + " when the session on " + branch + " started"
		if _, err := git("stash", "push", "-q", "--include-untracked", "-m", msg); err != nil {
			return sw, fmt.Errorf("keeping the uncommitted work in a stash: %w", err)
		}
		if sw.Stash, _ = git("rev-parse", "-q", "--verify", "refs/stash"); !isHex(sw.Stash) {
			sw.Stash = "stash@{0}"
		}
	}
	kept := ""
	if sw.Stash != "" {
		kept = " (the uncommitted work is in stash " + sw.Stash + ")"
	}
	if _, err := git("rev-parse", "-q", "--verify", local); err == nil {
		if _, err := git("checkout", "-q", branch); err != nil {
			return sw, fmt.Errorf("checking out %s%s: %w", branch, kept, err)
		}
		if _, err := git("merge", "-q", "--ff-only", remote); err != nil {
			// Back where it was, so that the next start tries again
			// rather than find the clone on the branch already.
			if from != "" {
				if _, rerr := git("checkout", "-q", from); rerr != nil {
					return sw, fmt.Errorf("bringing %s up to the rig's%s: %w (and going back to %s: %v)", branch, kept, err, from, rerr)
				}
			}
			return sw, fmt.Errorf("bringing %s up to the rig's%s: %w", branch, kept, err)
		}
	} else if _, err := git("checkout", "-q", "-b", branch, "--track", remote); err != nil {
		return sw, fmt.Errorf("checking out %s%s: %w", branch, kept, err)
	}
	sw.To = branch
	return sw, nil
}

// isBranch says whether name is a branch name git takes (and no option).
func isBranch(ctx context.Context, name string) bool {
	return !strings.HasPrefix(name, "-") && exec.CommandContext(ctx, "git", "check-ref-format", "--branch", name).Run() == nil
}

// isHex says whether s is a commit's full hexadecimal name.
func isHex(s string) bool {
	return (len(s) == 40 || len(s) == 64) && strings.Trim(s, "0123456789abcdef") == ""
}
