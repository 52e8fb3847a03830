// Package git serves a rig's bare repository (<town>/<rig>/.repo.git) to
// its polecats over their tunnels: a standard http.Server speaking git's
// smart HTTP protocol on git streams, running git upload-pack and
// receive-pack. Push policy is enforced inside git by hostd's own
// pre-receive hook; landed branches are queued for the upstream origin;
// fetches refresh the repository from origin when it is stale.
package git

import (
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/polecat-sidecar/sidecar/hostd/limits"
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
	Upstream *Upstream
	// RefreshAge is how stale a repository may be before a fetch refreshes
	// it from origin; negative turns refreshing off.
	RefreshAge time.Duration
	// RefreshTimeout bounds one refresh; on timeout what is there is served.
	RefreshTimeout time.Duration
	// Branches maps a rig to its polecats' branch patterns (see
	// ParseBranchPatterns); rigs not listed use DefaultBranchPatterns.
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

// DefaultConfig refreshes a repository older than a minute before a
// fetch, giving up after 30 s; runs at most 32 git processes, 4 per
// polecat, a request over waiting 10 s; ends requests idle for a minute;
// takes pushes up to 64 MiB; reconciles with origin every 5 minutes.
// Town, HooksDir, TempDir, Upstream, Branches, Polecats and KnownPolecats
// have no default.
func DefaultConfig() Config {
	return Config{
		RefreshAge:             time.Minute,      // negative: never refresh
		RefreshTimeout:         30 * time.Second, // above 0
		MaxProcesses:           32,               // at least 1
		MaxProcessesPerPolecat: 4,                // at least 1
		ProcessWait:            10 * time.Second, // above 0
		IdleTimeout:            time.Minute,      // above 0
		MaxPushSize:            64 << 20,         // at least 1
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
		settings.Positive("ProcessWait", c.ProcessWait),
		settings.Positive("IdleTimeout", c.IdleTimeout),
		settings.Positive("MaxPushSize", c.MaxPushSize),
	}
	for rig, list := range c.Branches {
		if _, err := ParseBranchPatterns(list); err != nil {
			errs = append(errs, fmt.Errorf("Branches of rig %s: %w", rig, err))
		}
	}
	for rig, names := range c.Polecats {
		for _, n := range names {
			if err := (wire.Identity{Rig: rig, Name: n}).Validate(); err != nil {
				errs = append(errs, fmt.Errorf("Polecats of rig %s: %w", rig, err))
			}
		}
	}
	return errors.Join(errs...)
}

// Service is the git smart HTTP service.
type Service struct {
	cfg      Config
	log      *slog.Logger
	ln       *tunnel.StreamListener
	refresh  *refresher
	env      []string
	metrics  *metrics
	procs    *procGate
	logLimit *logging.Limiter // failed requests, per polecat
}

type idKey struct{}

// New prepares the hooks directory (pre-receive and post-receive as links
// to this hostd binary) and the service; zero Config fields take
// DefaultConfig's.
func New(cfg Config) (*Service, error) {
	settings.FillZero(&cfg, DefaultConfig())
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("git: %w", err)
	}
	if err := installHooks(cfg.HooksDir); err != nil {
		return nil, err
	}
	if err := resetDir(cfg.TempDir); err != nil {
		return nil, err
	}
	s := &Service{cfg: cfg, log: cfg.Logger, ln: tunnel.NewStreamListener(), env: gitEnv(), metrics: newMetrics(),
		procs: newProcGate(cfg.MaxProcesses, cfg.MaxProcessesPerPolecat, cfg.ProcessWait), logLimit: logging.NewLimiter(30, time.Minute)}
	s.refresh = newRefresher(cfg.RefreshAge, cfg.RefreshTimeout, s.env, cfg.Logger)
	return s, nil
}

// installHooks links pre-receive and post-receive to the running binary.
func installHooks(dir string) error {
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding hostd's own binary for the git hooks: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("creating git hooks directory: %w", err)
	}
	for _, h := range []string{PreReceive, PostReceive} {
		p := filepath.Join(dir, h)
		_ = os.Remove(p)
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

// Serve answers git requests until ctx ends.
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
	go func() { <-ctx.Done(); srv.Close(); s.ln.Close() }()
	s.removeAllLeftovers(leftoverAgeStart)
	if s.cfg.Upstream != nil && s.cfg.Reconcile > 0 {
		go s.reconcileEvery(ctx, s.cfg.Reconcile)
	}
	err := srv.Serve(s.ln)
	if errors.Is(err, http.ErrServerClosed) || errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}

// ServeHTTP routes /v1/git/<rig>/{info/refs,git-upload-pack,git-receive-pack}
// and refuses everything else, dumb HTTP included.
func (s *Service) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	id, _ := r.Context().Value(idKey{}).(wire.Identity)
	rc := http.NewResponseController(w)
	cw, cr := &countingWriter{ResponseWriter: w}, &countingBody{ReadCloser: r.Body, rc: rc, idle: s.cfg.IdleTimeout}
	r.Body = cr
	rig, op, status, err := s.serve(cw, r, id)
	s.metrics.observe(op, status, err, cr.n, cw.n)
	if err != nil {
		if status != 0 {
			http.Error(w, err.Error(), status)
		}
		if ok, held := s.logLimit.Allow(id.String()); ok {
			s.log.Warn("git request failed", "polecat", id, "rig", rig, "op", op, "status", status, "duration", time.Since(start), "err", err, "lines_not_logged", held)
		}
		return
	}
	s.log.Info("git request", "polecat", id, "rig", rig, "op", op, "duration", time.Since(start))
}

// serve handles one request. On error, status is the HTTP status to send,
// or 0 when the response has already started.
func (s *Service) serve(w http.ResponseWriter, r *http.Request, id wire.Identity) (rig, op string, status int, err error) {
	if id.IsZero() {
		return "", "", http.StatusForbidden, errors.New("no polecat identity on this connection")
	}
	rest, ok := strings.CutPrefix(r.URL.Path, wire.GitPathPrefix)
	rig, op, _ = strings.Cut(rest, "/")
	if !ok || !validRig(rig) {
		return rig, op, http.StatusNotFound, errors.New("not a git endpoint: use /v1/git/<rig>")
	}
	service := ""
	switch {
	case op == "info/refs" && r.Method == http.MethodGet:
		service = r.URL.Query().Get("service")
		if service != "git-upload-pack" && service != "git-receive-pack" {
			return rig, op, http.StatusForbidden, errors.New("only smart HTTP is served (git 1.6.6 or later)")
		}
	case (op == "git-upload-pack" || op == "git-receive-pack") && r.Method == http.MethodPost:
		service = op
		if ct := r.Header.Get("Content-Type"); ct != "application/x-"+op+"-request" {
			return rig, op, http.StatusUnsupportedMediaType, fmt.Errorf("content type %q is not a %s request", ct, op)
		}
	default:
		return rig, op, http.StatusNotFound, fmt.Errorf("%s %s is not served: only smart HTTP fetch and push", r.Method, r.URL.Path)
	}
	if rig != id.Rig {
		return rig, op, http.StatusForbidden, fmt.Errorf("polecat %s belongs to rig %s, not %s", id, id.Rig, rig)
	}
	repo := filepath.Join(s.cfg.Town, rig, ".repo.git")
	if st, err := os.Stat(repo); err != nil || !st.IsDir() {
		return rig, op, http.StatusNotFound, fmt.Errorf("no repository for rig %s on this host", rig)
	}
	env, err := protocolEnv(r.Header.Get("Git-Protocol"))
	if err != nil {
		return rig, op, http.StatusBadRequest, err
	}
	env = append(append([]string{}, s.env...), env...)
	release, err := s.procs.acquire(r.Context(), id)
	if err != nil {
		w.Header().Set("Retry-After", "5")
		return rig, op, http.StatusServiceUnavailable, err
	}
	defer release()
	w.Header().Set("Cache-Control", "no-cache, max-age=0, must-revalidate")
	if op == "info/refs" {
		return rig, op + "?" + service, 0, s.advertise(w, r, repo, service, env)
	}
	body, gzipped, err := requestBody(r)
	if err != nil {
		return rig, op, http.StatusBadRequest, err
	}
	if gzipped {
		s.log.Debug("git request body is gzip-encoded", "polecat", id, "op", op)
	}
	defer body.Close()
	w.Header().Set("Content-Type", "application/x-"+service+"-result")
	if service == "git-upload-pack" {
		return rig, op, 0, s.run(r.Context(), env, body, w, uploadPack(repo, false)...)
	}
	return rig, op, 0, s.receive(r.Context(), w, body, repo, rig, id, env)
}

// validRig is the rig name rule of wire.Identity.
func validRig(rig string) bool {
	return wire.Identity{Rig: rig, Name: "x"}.Validate() == nil
}

// protocolEnv validates the Git-Protocol header before it reaches git's
// environment: only "version=1" or "version=2".
func protocolEnv(h string) ([]string, error) {
	switch h {
	case "":
		return nil, nil
	case "version=1", "version=2":
		return []string{"GIT_PROTOCOL=" + h}, nil
	default:
		return nil, fmt.Errorf("unsupported Git-Protocol header %q (want version=1 or version=2)", truncate(h))
	}
}

func truncate(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}

// requestBody undoes Content-Encoding (git gzips fetch requests over
// 1 KiB, which Gas Town's proxy did not, failing clones of repositories
// with many refs).
func requestBody(r *http.Request) (body io.ReadCloser, gzipped bool, err error) {
	switch enc := r.Header.Get("Content-Encoding"); enc {
	case "", "identity":
		return r.Body, false, nil
	case "gzip", "x-gzip":
		gz, err := gzip.NewReader(r.Body)
		if err != nil {
			return nil, false, fmt.Errorf("gzip request body: %w", err)
		}
		return gz, true, nil
	default:
		return nil, false, fmt.Errorf("unsupported Content-Encoding %q", truncate(enc))
	}
}

// uploadPack is the upload-pack command line: partial clones allowed.
func uploadPack(repo string, advertise bool) []string {
	args := []string{"-c", "uploadpack.allowFilter=true", "-c", "uploadpack.allowReachableSHA1InWant=true", "upload-pack", "--stateless-rpc"}
	if advertise {
		args = append(args, "--advertise-refs")
	}
	return append(args, repo)
}

// advertise answers info/refs: the service line (protocol v0/v1 only) and
// the ref advertisement.
func (s *Service) advertise(w http.ResponseWriter, r *http.Request, repo, service string, env []string) error {
	if service == "git-upload-pack" {
		s.refresh.maybe(r.Context(), repo, env)
	}
	w.Header().Set("Content-Type", "application/x-"+service+"-advertisement")
	if !strings.Contains(r.Header.Get("Git-Protocol"), "version=2") {
		line := "# service=" + service + "\n"
		fmt.Fprintf(w, "%04x%s0000", len(line)+4, line)
	}
	args := uploadPack(repo, true)
	if service == "git-receive-pack" {
		args = []string{"receive-pack", "--stateless-rpc", "--advertise-refs", repo}
	}
	return s.run(r.Context(), env, nil, w, args...)
}

// receive runs receive-pack with hostd's hooks and the identity, then
// queues what landed for upstream.
func (s *Service) receive(ctx context.Context, w http.ResponseWriter, body io.Reader, repo, rig string, id wire.Identity, env []string) error {
	landed, err := os.CreateTemp(s.cfg.TempDir, "landed-*")
	if err != nil {
		return err
	}
	landed.Close()
	defer os.Remove(landed.Name())
	penv, err := s.policyEnv(rig)
	if err != nil {
		return err
	}
	env = append(env, IdentityEnv+"="+id.String(), LandedEnv+"="+landed.Name())
	env = append(env, penv...)
	if err := s.run(ctx, env, body, w, "-c", "core.hooksPath="+s.cfg.HooksDir,
		"-c", fmt.Sprintf("receive.maxInputSize=%d", s.cfg.MaxPushSize), "receive-pack", "--stateless-rpc", repo); err != nil {
		if strings.Contains(err.Error(), "pack exceeds maximum allowed size") {
			limits.Hit(limits.GitPushSize)
			return fmt.Errorf("push larger than git.max_push_size (%d bytes): %w", s.cfg.MaxPushSize, err)
		}
		return err
	}
	b, _ := os.ReadFile(landed.Name())
	var branches []string
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) == 3 && strings.HasPrefix(f[2], "refs/heads/") {
			s.log.Info("push landed", "polecat", id, "rig", rig, "ref", f[2], "new", f[1])
			branches = append(branches, strings.TrimPrefix(f[2], "refs/heads/"))
		}
	}
	if s.cfg.Upstream != nil && len(branches) > 0 {
		s.cfg.Upstream.Enqueue(rig, id.Name, branches...)
	}
	return nil
}

// run runs git in its own process group, streaming stdin and stdout. If
// the request goes away, git gets SIGTERM (so it can remove its locks),
// then SIGKILL.
func (s *Service) run(ctx context.Context, env []string, stdin io.Reader, w http.ResponseWriter, args ...string) error {
	name := "git"
	for i := 0; i < len(args); i++ {
		if args[i] == "-c" {
			i++
		} else {
			name = "git " + args[i]
			break
		}
	}
	// git's stdout is a pipe of our own, read here in chunks of whatever
	// it has written, up to stdoutChunk: each chunk costs an HTTP chunk
	// header, a flush and a burst of packets on the tunnel, which at
	// exec's 32 KiB made a third of hostd's work in a clone.
	pr, pw, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("%s: making its stdout pipe: %w", name, err)
	}
	defer pr.Close()
	growPipe(pr, stdoutChunk)
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Env = env
	cmd.Stdin = stdin
	cmd.Stdout = pw
	var stderr strings.Builder
	cmd.Stderr = &limitedWriter{w: &stderr, n: 4096}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) }
	cmd.WaitDelay = 5 * time.Second
	err = cmd.Start()
	pw.Close()
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	// As exec's WaitDelay would: once the request is gone, stop reading
	// after the delay even if something git started still holds the pipe.
	stop := context.AfterFunc(ctx, func() { time.AfterFunc(cmd.WaitDelay, func() { pr.Close() }) })
	defer stop()
	buf := chunkPool.Get().(*[]byte)
	_, copyErr := io.CopyBuffer(flushWriter{w: w, rc: http.NewResponseController(w), idle: s.cfg.IdleTimeout}, onlyReader{pr}, *buf)
	chunkPool.Put(buf)
	pr.Close() // a reader gone: git gets EPIPE rather than waiting on a full pipe
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("%s: %w: %s", name, err, strings.TrimSpace(stderr.String()))
	}
	if copyErr != nil {
		return fmt.Errorf("%s: sending its output: %w", name, copyErr)
	}
	return nil
}

// stdoutChunk is the most of git's output sent as one chunk, and the size
// of its pipe.
const stdoutChunk = 256 << 10

// chunkPool keeps the buffers git's output is read into.
var chunkPool = sync.Pool{New: func() any { b := make([]byte, stdoutChunk); return &b }}

// onlyReader hides a file's WriteTo, so that io.CopyBuffer uses the
// buffer it is given.
type onlyReader struct{ r io.Reader }

func (o onlyReader) Read(p []byte) (int, error) { return o.r.Read(p) }

// flushWriter sends each chunk git writes at once: packs stream, they are
// never held whole. A reader that takes nothing for idle ends the request.
type flushWriter struct {
	w    http.ResponseWriter
	rc   *http.ResponseController
	idle time.Duration
}

func (f flushWriter) Write(p []byte) (int, error) {
	_ = f.rc.SetWriteDeadline(time.Now().Add(f.idle))
	n, err := f.w.Write(p)
	if err == nil {
		err = f.rc.Flush()
	}
	return n, err
}

// limitedWriter keeps the first n bytes and drops the rest.
type limitedWriter struct {
	w io.Writer
	n int
}

func (l *limitedWriter) Write(p []byte) (int, error) {
	if l.n > 0 {
		k := min(len(p), l.n)
		_, _ = l.w.Write(p[:k])
		l.n -= k
	}
	return len(p), nil
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
