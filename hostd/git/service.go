// Package git serves a rig's bare repository (<town>/<rig>/.repo.git) to
// its polecats over their tunnels: a standard http.Server speaking git's
// smart HTTP protocol on git streams, running git upload-pack and
// receive-pack within per-polecat process limits. Push policy is enforced
// inside git by hostd's own hooks (hostd/git/hook), which the service
// installs and gives the rig's branch patterns and known polecats; landed
// branches are handed to the upstream queue (hostd/upstream, behind the
// Upstream interface declared here), fetches refresh the repository from
// origin through hostd/upstream's Refresher when it is stale, and each
// rig is reconciled with origin on a schedule.
package git

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/polecat-sidecar/sidecar/hostd/git/branch"
	"github.com/polecat-sidecar/sidecar/hostd/git/hook"
	"github.com/polecat-sidecar/sidecar/hostd/upstream"
	"github.com/polecat-sidecar/sidecar/internal/logging"
	"github.com/polecat-sidecar/sidecar/internal/settings"
	"github.com/polecat-sidecar/sidecar/tunnel"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// Config configures the git service.
type Config struct {
	// Town is the Gas Town root; rig repositories are <town>/<rig>/.repo.git.
	Town string
	// HooksDir is the hooks directory hostd owns; receive-pack runs with
	// core.hooksPath set to it.
	HooksDir string
	// Upstream queues landed branches for origin; nil when upstream
	// pushing is off.
	Upstream Upstream
	// RefreshAge is how stale a repository may be before a fetch refreshes
	// it from origin; negative turns refreshing off.
	RefreshAge time.Duration
	// RefreshTimeout bounds one refresh; on timeout what is there is served.
	RefreshTimeout time.Duration
	// Branches maps a rig to its polecats' branch patterns (see
	// branch.ParsePatterns); rigs not listed use branch.DefaultPatterns.
	Branches map[string][]string
	// Polecats maps a rig to polecat names known beside those hostd issued
	// certificates to (Gas Town's name pool, say).
	Polecats map[string][]string
	// KnownPolecats lists every polecat name hostd ever issued a
	// certificate to in a rig. A branch belongs to the longest of these
	// and Polecats' names it matches.
	KnownPolecats func(rig string) ([]string, error)
	// MaxProcesses bounds the git processes serving polecats at once, and
	// MaxProcessesPerPolecat those of one polecat; a request over either
	// waits up to ProcessWait, then gets 503 with the setting named.
	MaxProcesses, MaxProcessesPerPolecat int
	ProcessWait                          time.Duration
	// IdleTimeout ends a request whose body or response makes no progress
	// for this long (an upload never finished, a reader that stopped), and
	// a keep-alive connection idle this long.
	IdleTimeout time.Duration
	// MaxPushSize is receive.maxInputSize: the largest pack one push may
	// send.
	MaxPushSize int
	// MaxCheckoutSize bounds the bytes a push may make git write into a
	// host worktree where the pushed branch is checked out (the branch's
	// new tree, receive.denyCurrentBranch=updateInstead): the sum of its
	// blobs' sizes, times the growth its .gitattributes allow at worst.
	// MaxCheckoutFiles bounds that tree's files, links and directories.
	// The pre-receive hook refuses a push over either before anything is
	// written; pushes of branches checked out nowhere are not counted.
	MaxCheckoutSize, MaxCheckoutFiles int
	// WorktreeGuard is what a push gets whose checkout in a host worktree
	// would change what host processes run or follow there: a symlink
	// resolving outside the worktree, anything under .beads, .githooks or
	// the worktree's core.hooksPath. hook.GuardRefuse refuses the push,
	// naming the paths; hook.GuardSkip lets it land and leaves the
	// worktree as it was (push-to-checkout), the reason logged.
	WorktreeGuard string
	// TempDir holds each push's record of landed refs; it is emptied at
	// start.
	TempDir string
	// Reconcile is how often each rig's polecat branches are compared with
	// origin and any that differ queued (also once at start); negative
	// turns it off. Zero Upstream turns it off too.
	Reconcile time.Duration
	// Logger receives one line per request.
	Logger *slog.Logger
}

// DefaultConfig refreshes a repository a minute old before a fetch (30 s
// at most); runs 32 git processes, 4 per polecat, a request over waiting
// 10 s; ends requests idle a minute; takes pushes up to 64 MiB, and into a
// host worktree a checkout of 1 GiB in 250,000 entries (three times the
// Linux kernel's tree) that changes nothing host processes run or follow;
// reconciles every 5 minutes. Town, HooksDir, TempDir, Upstream,
// Branches, Polecats and KnownPolecats have no default.
func DefaultConfig() Config {
	return Config{
		RefreshAge:             time.Minute,      // negative: never refresh
		RefreshTimeout:         30 * time.Second, // above 0
		MaxProcesses:           32,               // at least 1
		MaxProcessesPerPolecat: 4,                // at least 1
		ProcessWait:            10 * time.Second, // above 0
		IdleTimeout:            time.Minute,      // above 0
		MaxPushSize:            64 << 20,         // at least 1
		MaxCheckoutSize:        1 << 30,          // at least 1
		MaxCheckoutFiles:       250_000,          // at least 1
		WorktreeGuard:          hook.GuardRefuse, // or hook.GuardSkip
		Reconcile:              5 * time.Minute,  // negative: never reconcile
		Logger:                 slog.Default(),
	}
}

// Validate names each field out of its range, a malformed branch
// pattern or polecat name; New calls it once zero fields have their
// defaults.
func (c Config) Validate() error {
	errs := []error{
		settings.Required("Town", c.Town),
		settings.Required("HooksDir", c.HooksDir),
		settings.Required("TempDir", c.TempDir),
		settings.Positive("RefreshTimeout", c.RefreshTimeout),
		settings.Positive("MaxProcesses", c.MaxProcesses),
		settings.Positive("MaxProcessesPerPolecat", c.MaxProcessesPerPolecat),
		settings.AtMost("MaxProcessesPerPolecat", c.MaxProcessesPerPolecat, "MaxProcesses", c.MaxProcesses),
		settings.NotZero("RefreshAge", c.RefreshAge, "negative: never refresh"),
		settings.NotZero("Reconcile", c.Reconcile, "negative: never reconcile"),
		settings.Positive("ProcessWait", c.ProcessWait),
		settings.Positive("IdleTimeout", c.IdleTimeout),
		settings.Positive("MaxPushSize", c.MaxPushSize),
		settings.Positive("MaxCheckoutSize", c.MaxCheckoutSize),
		settings.Positive("MaxCheckoutFiles", c.MaxCheckoutFiles),
	}
	if c.WorktreeGuard != hook.GuardRefuse && c.WorktreeGuard != hook.GuardSkip {
		errs = append(errs, settings.Invalid("WorktreeGuard", c.WorktreeGuard, fmt.Errorf("it must be %s or %s", hook.GuardRefuse, hook.GuardSkip)))
	}
	for rig, list := range c.Branches {
		if _, err := branch.ParsePatterns(list); err != nil {
			errs = append(errs, settings.Invalid("Branches."+rig, list, err))
		}
	}
	for rig, names := range c.Polecats {
		for _, n := range names {
			if err := (wire.Identity{Rig: rig, Name: n}).Validate(); err != nil {
				errs = append(errs, settings.Invalid("Polecats."+rig, n, err))
			}
		}
	}
	return errors.Join(errs...)
}

// Upstream is what the service needs of the upstream queue
// (hostd/upstream.Queue): landed branches queued for origin, and each
// rig's polecat branches that differ from origin queued again.
type Upstream interface {
	// Enqueue queues rig's branches, pushed by the polecat owner; it
	// returns how many it queued.
	Enqueue(rig, owner string, branches ...string) int
	// Reconcile queues rig's branches in repo that owner names a polecat
	// for and whose tip differs from origin's.
	Reconcile(ctx context.Context, rig, repo string, owner func(branch string) (string, bool)) (int, error)
}

// Service is the git smart HTTP service.
type Service struct {
	cfg      Config
	log      *slog.Logger
	ln       *tunnel.StreamListener
	refresh  *upstream.Refresher
	env      []string
	metrics  *metrics
	procs    *procGate
	logLimit *logging.Limiter // failed requests, per polecat
}

type idKey struct{}

// New prepares the hooks directory (pre-receive, post-receive and, with
// hook.GuardSkip, push-to-checkout as links to this hostd binary) and the
// service; zero Config fields take DefaultConfig's.
func New(cfg Config) (*Service, error) {
	settings.FillZero(&cfg, DefaultConfig())
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("git: %w", err)
	}
	if err := installHooks(cfg.HooksDir, cfg.WorktreeGuard == hook.GuardSkip); err != nil {
		return nil, err
	}
	if err := resetDir(cfg.TempDir); err != nil {
		return nil, err
	}
	s := &Service{cfg: cfg, log: cfg.Logger, ln: tunnel.NewStreamListener(), env: gitEnv(), metrics: newMetrics(),
		procs: newProcGate(cfg.MaxProcesses, cfg.MaxProcessesPerPolecat, cfg.ProcessWait), logLimit: logging.NewLimiter(30, time.Minute)}
	s.refresh = upstream.NewRefresher(cfg.RefreshAge, cfg.RefreshTimeout, s.env, cfg.Logger)
	return s, nil
}

// installHooks links pre-receive and post-receive to the running binary,
// and push-to-checkout when skip (or removes the one an earlier hostd
// left: without it git updates worktrees itself).
func installHooks(dir string, skip bool) error {
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding hostd's own binary for the git hooks: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("creating git hooks directory: %w", err)
	}
	for _, h := range []string{hook.PreReceive, hook.PostReceive, hook.PushToCheckout} {
		p := filepath.Join(dir, h)
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("replacing git %s hook: %w", h, err)
		}
		if h == hook.PushToCheckout && !skip {
			continue
		}
		if err := os.Symlink(self, p); err != nil {
			return fmt.Errorf("installing git %s hook: %w", h, err)
		}
	}
	return nil
}

// gitEnv is hostd's environment without GIT_* variables, which would
// redirect or reconfigure the git it runs.
func gitEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GIT_") {
			env = append(env, kv)
		}
	}
	return env
}

// Handler is what the tunnel's git streams are given to.
func (s *Service) Handler() tunnel.Handler { return s.ln }

// Serve answers git requests until ctx ends; it returns once the
// goroutines it started (the closer, the reconciler) have.
func (s *Service) Serve(ctx context.Context) error {
	srv := &http.Server{
		Handler:           s,
		ReadHeaderTimeout: min(30*time.Second, s.cfg.IdleTimeout),
		IdleTimeout:       s.cfg.IdleTimeout,
		MaxHeaderBytes:    64 << 10,
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			id, _ := tunnel.ConnIdentity(c)
			return context.WithValue(ctx, idKey{}, id)
		},
		ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
	}
	ctx, cancel := context.WithCancel(ctx) // a failed Serve ends the others too
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	wg.Go(func() { <-ctx.Done(); srv.Close(); s.ln.Close() })
	s.removeAllLeftovers(leftoverAgeStart)
	if s.cfg.Upstream != nil && s.cfg.Reconcile > 0 {
		wg.Go(func() { s.reconcileEvery(ctx, s.cfg.Reconcile) })
	}
	err := srv.Serve(s.ln)
	if errors.Is(err, http.ErrServerClosed) || errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}

// resetDir empties dir, creating it if need be.
func resetDir(dir string) error {
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("emptying %s: %w", dir, err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("creating %s: %w", dir, err)
	}
	return nil
}
