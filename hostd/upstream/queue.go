// Package upstream is hostd's link from each rig's .repo.git to its
// origin: the persisted queue of landed polecat branches to push there
// (Queue), the reconciliation that queues what a killed hostd never did,
// and the refresh that keeps a repository no staler than a bound before a
// fetch is served from it (Refresher). hostd/git serves polecats; this
// package alone talks to origin.
package upstream

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/polecat-sidecar/sidecar/hostd/api"
	"github.com/polecat-sidecar/sidecar/hostd/limits"
	"github.com/polecat-sidecar/sidecar/hostd/state"
	"github.com/polecat-sidecar/sidecar/internal/logging"
	"github.com/polecat-sidecar/sidecar/internal/settings"
)

// Queue is the persisted queue of branches to push from a rig's
// .repo.git to its origin: one entry per rig and branch (later pushes of
// the same branch coalesce), retried with backoff until they succeed, kept
// on disk across restarts. Polecats take turns: each round pushes at most
// a batch of each one's branches, so one polecat's thousand branches delay
// another's by one batch.
type Queue struct {
	town, path string
	log        *slog.Logger
	minBackoff time.Duration
	maxBackoff time.Duration
	timeout    time.Duration
	batch      int
	perPolecat int
	logLimit   *logging.Limiter

	mu    sync.Mutex
	items map[string]*item
	wake  chan struct{}
}

// Config tunes the queue; zero fields take DefaultConfig's.
type Config struct {
	// MinBackoff and MaxBackoff bound the wait between attempts: the first
	// retry comes after MinBackoff, each later one after twice the last.
	MinBackoff, MaxBackoff time.Duration
	// Timeout bounds one git push.
	Timeout time.Duration
	// Batch is how many of one polecat's branches go in one push, its
	// turn in a round.
	Batch int
	// MaxPerPolecat bounds one polecat's queued branches in a rig; more
	// are not queued (and logged), and reconciliation queues them once
	// there is room.
	MaxPerPolecat int
}

// DefaultConfig retries a failed push after 1 s, doubling up to
// 5 min, gives one push 5 min, pushes 20 branches of a polecat per turn
// and queues at most 1000 per polecat.
func DefaultConfig() Config {
	return Config{
		MinBackoff:    time.Second,     // above 0
		MaxBackoff:    5 * time.Minute, // at least MinBackoff
		Timeout:       5 * time.Minute, // above 0
		Batch:         20,              // at least 1
		MaxPerPolecat: 1000,            // at least 1
	}
}

// Validate names each field out of its range; Open calls it once zero
// fields have their defaults.
func (c Config) Validate() error {
	return errors.Join(
		settings.Positive("MinBackoff", c.MinBackoff),
		settings.AtMost("MinBackoff", c.MinBackoff, "MaxBackoff", c.MaxBackoff),
		settings.Positive("Timeout", c.Timeout),
		settings.Positive("Batch", c.Batch),
		settings.Positive("MaxPerPolecat", c.MaxPerPolecat),
	)
}

// Open loads the queue kept in file (created on first use); zero Config
// fields take DefaultConfig's.
func Open(town, file string, cfg Config, log *slog.Logger) (*Queue, error) {
	settings.FillZero(&cfg, DefaultConfig())
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("upstream: %w", err)
	}
	u := &Queue{town: town, path: file, log: log, minBackoff: cfg.MinBackoff, maxBackoff: cfg.MaxBackoff, timeout: cfg.Timeout,
		batch: cfg.Batch, perPolecat: cfg.MaxPerPolecat, logLimit: logging.NewLimiter(5, time.Minute),
		items: map[string]*item{}, wake: make(chan struct{}, 1)}
	var list []*item
	if err := state.Load(file, &list); err != nil {
		return nil, fmt.Errorf("upstream queue: %w", err)
	}
	for _, it := range list {
		u.items[key(it.Rig, it.Branch)] = it
	}
	return u, nil
}

// item is a branch waiting for origin, as the queue's file holds it: the
// queue's own type, so that a change to the control API does not change
// what is on disk. Its JSON is the file's format; a field renamed here
// would leave the queues written before unread (testdata/upstream.json is
// one written by an earlier release).
type item struct {
	Rig    string `json:"rig"`
	Branch string `json:"branch"`
	// Owner is the polecat it is queued for; the queue takes turns.
	Owner     string    `json:"owner,omitempty"`
	Since     time.Time `json:"since"`
	Attempts  int       `json:"attempts"`
	LastError string    `json:"last_error,omitempty"`
	NextTry   time.Time `json:"next_try"`
}

// asAPI is it as the control API shows it (hostd status).
func (it item) asAPI() api.UpstreamItem {
	return api.UpstreamItem{Rig: it.Rig, Branch: it.Branch, Owner: it.Owner, Since: it.Since, Attempts: it.Attempts,
		LastError: it.LastError, NextTry: it.NextTry}
}

func key(rig, branch string) string { return rig + "\x00" + branch }

// Enqueue asks for branches of rig, owned by the polecat owner, to be
// pushed to origin as they are when the push happens. A branch already
// queued is pushed once, at once. Branches beyond the owner's share of
// the queue are not queued; it returns how many were.
func (u *Queue) Enqueue(rig, owner string, branches ...string) int {
	u.mu.Lock()
	mine := 0
	for _, it := range u.items {
		if it.Rig == rig && it.Owner == owner {
			mine++
		}
	}
	queued, refused := 0, 0
	now := time.Now()
	for _, branch := range branches {
		k := key(rig, branch)
		it := u.items[k]
		if it == nil {
			if mine >= u.perPolecat {
				refused++
				continue
			}
			mine++
			it = &item{Rig: rig, Branch: branch, Owner: owner, Since: now}
			u.items[k] = it
		}
		it.NextTry = now
		queued++
	}
	u.saveLocked()
	u.mu.Unlock()
	if refused > 0 {
		limits.Hit(limits.Upstream)
		if ok, held := u.logLimit.Allow(rig + "/" + owner); ok {
			u.log.Warn("upstream queue full for this polecat; reconciliation queues the rest later", "rig", rig, "owner", owner,
				"not_queued", refused, "limit", u.perPolecat, "setting", "git.upstream_max_per_polecat", "lines_not_logged", held)
		}
	}
	select {
	case u.wake <- struct{}{}:
	default:
	}
	return queued
}

// Pending lists the queue, oldest first, as the control API shows it.
func (u *Queue) Pending() []api.UpstreamItem {
	u.mu.Lock()
	defer u.mu.Unlock()
	out := make([]api.UpstreamItem, 0, len(u.items))
	for _, it := range u.items {
		out = append(out, it.asAPI())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Since.Before(out[j].Since) })
	return out
}

// saveLocked persists the queue; failures are logged (the queue in memory
// still works).
func (u *Queue) saveLocked() {
	list := make([]*item, 0, len(u.items))
	for _, it := range u.items {
		list = append(list, it)
	}
	if err := state.Save(u.path, list); err != nil {
		u.log.Error("saving upstream queue failed", "file", u.path, "err", err)
	}
}

// Run pushes due entries until ctx ends.
func (u *Queue) Run(ctx context.Context) {
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

// runDue pushes one round of due entries, a batch of each owner's, and
// returns how long until the next is due (0 after a round: look again).
func (u *Queue) runDue(ctx context.Context) time.Duration {
	u.mu.Lock()
	groups := map[string][]item{}
	var order []string
	next := time.Hour
	now := time.Now()
	for _, it := range u.items {
		if now.Before(it.NextTry) {
			next = min(next, it.NextTry.Sub(now))
			continue
		}
		g := it.Rig + "\x00" + it.Owner
		if groups[g] == nil {
			order = append(order, g)
		}
		groups[g] = append(groups[g], *it)
	}
	u.mu.Unlock()
	for _, g := range groups {
		sort.Slice(g, func(i, j int) bool { return g[i].Since.Before(g[j].Since) })
	}
	sort.Slice(order, func(i, j int) bool { return groups[order[i]][0].Since.Before(groups[order[j]][0].Since) })
	for _, g := range order {
		if ctx.Err() != nil {
			return 0
		}
		batch := groups[g]
		if len(batch) > u.batch {
			batch = batch[:u.batch]
		}
		u.finish(batch, u.push(ctx, batch[0].Rig, batch))
		next = 0
	}
	return next
}

// finish records each pushed entry's result: done entries leave the queue
// (unless re-queued meanwhile), failed ones back off.
func (u *Queue) finish(batch []item, errs map[string]error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	for _, it := range batch {
		cur := u.items[key(it.Rig, it.Branch)]
		err := errs[it.Branch]
		switch {
		case cur == nil:
		case err == nil:
			if !cur.NextTry.After(it.NextTry) { // not re-queued meanwhile
				delete(u.items, key(it.Rig, it.Branch))
			}
			u.log.Info("pushed upstream", "rig", it.Rig, "branch", it.Branch, "owner", it.Owner, "attempts", cur.Attempts+1)
		default:
			cur.Attempts++
			cur.LastError = err.Error()
			wait := min(u.minBackoff<<min(cur.Attempts-1, 20), u.maxBackoff)
			cur.NextTry = time.Now().Add(wait)
			u.log.Warn("upstream push failed; will retry", "rig", it.Rig, "branch", it.Branch, "attempt", cur.Attempts, "in", wait, "err", err)
		}
	}
	u.saveLocked()
}
