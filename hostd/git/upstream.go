package git

import (
	"context"
	"fmt"
	"log/slog"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/polecat-sidecar/sidecar/hostd/state"
)

// Pending is a branch waiting to be pushed from a rig's .repo.git to its
// origin.
type Pending struct {
	Rig       string    `json:"rig"`
	Branch    string    `json:"branch"`
	Since     time.Time `json:"since"`
	Attempts  int       `json:"attempts"`
	LastError string    `json:"last_error,omitempty"`
	NextTry   time.Time `json:"next_try"`
}

// Upstream is the persisted queue of branches to push from a rig's
// .repo.git to its origin: one entry per rig and branch (later pushes of
// the same branch coalesce), retried with backoff until they succeed, kept
// on disk across restarts.
type Upstream struct {
	town, path string
	log        *slog.Logger
	minBackoff time.Duration
	maxBackoff time.Duration
	timeout    time.Duration

	mu    sync.Mutex
	items map[string]*Pending
	wake  chan struct{}
}

// UpstreamConfig tunes the queue; zero fields take DefaultUpstreamConfig's.
type UpstreamConfig struct {
	// MinBackoff and MaxBackoff bound the wait between attempts: the first
	// retry comes after MinBackoff, each later one after twice the last.
	MinBackoff, MaxBackoff time.Duration
	// Timeout bounds one git push.
	Timeout time.Duration
}

// DefaultUpstreamConfig retries a failed push after 1 s, doubling up to
// 5 min, and gives one push 5 min.
func DefaultUpstreamConfig() UpstreamConfig {
	return UpstreamConfig{MinBackoff: time.Second, MaxBackoff: 5 * time.Minute, Timeout: 5 * time.Minute}
}

// OpenUpstream loads the queue kept in file (created on first use).
func OpenUpstream(town, file string, cfg UpstreamConfig, log *slog.Logger) (*Upstream, error) {
	u := &Upstream{town: town, path: file, log: log, minBackoff: cfg.MinBackoff, maxBackoff: cfg.MaxBackoff, timeout: cfg.Timeout,
		items: map[string]*Pending{}, wake: make(chan struct{}, 1)}
	d := DefaultUpstreamConfig()
	if u.minBackoff <= 0 {
		u.minBackoff = d.MinBackoff
	}
	if u.maxBackoff <= 0 {
		u.maxBackoff = d.MaxBackoff
	}
	if u.timeout <= 0 {
		u.timeout = d.Timeout
	}
	var list []*Pending
	if err := state.Load(file, &list); err != nil {
		return nil, fmt.Errorf("upstream queue: %w", err)
	}
	for _, it := range list {
		u.items[key(it.Rig, it.Branch)] = it
	}
	return u, nil
}

func key(rig, branch string) string { return rig + "\x00" + branch }

// Enqueue asks for branch of rig to be pushed to origin as it is when the
// push happens. A branch already queued is pushed once, at once.
func (u *Upstream) Enqueue(rig, branch string) {
	u.mu.Lock()
	k := key(rig, branch)
	it := u.items[k]
	if it == nil {
		it = &Pending{Rig: rig, Branch: branch, Since: time.Now()}
		u.items[k] = it
	}
	it.NextTry = time.Now()
	u.saveLocked()
	u.mu.Unlock()
	select {
	case u.wake <- struct{}{}:
	default:
	}
}

// Pending lists the queue, oldest first.
func (u *Upstream) Pending() []Pending {
	u.mu.Lock()
	defer u.mu.Unlock()
	out := make([]Pending, 0, len(u.items))
	for _, it := range u.items {
		out = append(out, *it)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Since.Before(out[j].Since) })
	return out
}

// saveLocked persists the queue; failures are logged (the queue in memory
// still works).
func (u *Upstream) saveLocked() {
	list := make([]*Pending, 0, len(u.items))
	for _, it := range u.items {
		list = append(list, it)
	}
	if err := state.Save(u.path, list); err != nil {
		u.log.Error("saving upstream queue failed", "file", u.path, "err", err)
	}
}

// Run pushes due entries until ctx ends.
func (u *Upstream) Run(ctx context.Context) {
	for {
		next := u.runDue(ctx)
		t := time.NewTimer(next)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-u.wake:
		case <-t.C:
		}
		t.Stop()
	}
}

// runDue pushes every due entry and returns how long until the next one.
func (u *Upstream) runDue(ctx context.Context) time.Duration {
	u.mu.Lock()
	var due []Pending
	next := time.Hour
	now := time.Now()
	for _, it := range u.items {
		if !now.Before(it.NextTry) {
			due = append(due, *it)
		} else {
			next = min(next, it.NextTry.Sub(now))
		}
	}
	u.mu.Unlock()
	for _, it := range due {
		if ctx.Err() != nil {
			return 0
		}
		err := u.push(ctx, it.Rig, it.Branch)
		u.mu.Lock()
		cur := u.items[key(it.Rig, it.Branch)]
		switch {
		case cur == nil:
		case err == nil:
			if !cur.NextTry.After(it.NextTry) { // not re-queued meanwhile
				delete(u.items, key(it.Rig, it.Branch))
			}
			u.log.Info("pushed upstream", "rig", it.Rig, "branch", it.Branch, "attempts", cur.Attempts+1)
		default:
			cur.Attempts++
			cur.LastError = err.Error()
			wait := min(u.minBackoff<<min(cur.Attempts-1, 20), u.maxBackoff)
			cur.NextTry = time.Now().Add(wait)
			next = min(next, wait)
			u.log.Warn("upstream push failed; will retry", "rig", it.Rig, "branch", it.Branch, "attempt", cur.Attempts, "in", wait, "err", err)
		}
		u.saveLocked()
		u.mu.Unlock()
	}
	return next
}

// push sends branch as it is now to origin, or deletes it there when it no
// longer exists here. Force is needed: polecats may force-push their own
// branches.
func (u *Upstream) push(ctx context.Context, rig, branch string) error {
	repo := filepath.Join(u.town, rig, ".repo.git")
	ref := "refs/heads/" + branch
	spec := "+" + ref + ":" + ref
	if exec.Command("git", "-C", repo, "rev-parse", "--verify", "--quiet", ref).Run() != nil {
		spec = ":" + ref
	}
	ctx, cancel := context.WithTimeout(ctx, u.timeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, "git", "-C", repo, "push", "--quiet", "--porcelain", "origin", spec).CombinedOutput()
	if err != nil {
		return fmt.Errorf("git push origin %s: %v: %s", spec, err, gitError(string(out)))
	}
	return nil
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
