package git

import (
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/polecat-sidecar/sidecar/hostd/git/hook"
	"github.com/polecat-sidecar/sidecar/hostd/git/internal/limited"
	"github.com/polecat-sidecar/sidecar/hostd/limits"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

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

// logGuard counts and logs, rate-limited per polecat, what the pre-receive
// hook recorded at path that the host worktree guard refused or skipped.
func (s *Service) logGuard(id wire.Identity, rig, path string) {
	recs, err := hook.ReadRecords(path)
	if err != nil {
		s.log.Warn("reading what the host worktree guard did", "polecat", id, "rig", rig, "err", err)
	}
	for _, r := range recs {
		if r.Action != hook.GuardRefuse && r.Action != hook.GuardSkip {
			continue // not the hook's: labels come from a fixed set
		}
		s.metrics.guard.WithLabelValues(r.Action).Inc()
		ok, held := s.logLimit.Allow(id.String())
		if !ok {
			continue
		}
		msg := "push refused: it would change what host processes run or follow in a host worktree"
		if r.Action == hook.GuardSkip {
			msg = "push landed without updating its host worktree, where it would change what host processes run or follow"
		}
		s.log.Warn(msg, "polecat", id, "rig", rig, "ref", r.Ref, "commit", r.Commit, "worktree", r.Worktree,
			"paths", r.Paths, "more_paths", r.More, "setting", "git.worktree_guard="+r.Action, "lines_not_logged", held)
	}
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
		return nil, fmt.Errorf("unsupported Git-Protocol header %q (want version=1 or version=2)", limited.Truncate(h))
	}
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
		return nil, false, fmt.Errorf("unsupported Content-Encoding %q", limited.Truncate(enc))
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

// receivePack is the receive-pack command line: hostd's hooks, pushes up
// to maxPushSize, and a branch checked out in a worktree of repo updated
// there.
func receivePack(repo, hooksDir string, maxPushSize int) []string {
	return []string{"-c", "core.hooksPath=" + hooksDir, "-c", "receive.denyCurrentBranch=updateInstead",
		"-c", fmt.Sprintf("receive.maxInputSize=%d", maxPushSize), "receive-pack", "--stateless-rpc", repo}
}

// advertise answers info/refs: the service line (protocol v0/v1 only) and
// the ref advertisement.
func (s *Service) advertise(w http.ResponseWriter, r *http.Request, repo, service string, env []string) error {
	if service == "git-upload-pack" {
		s.refresh.Maybe(r.Context(), repo, env)
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
// queues what landed for upstream. A branch checked out in the polecat's
// host worktree is updated there too (updateInstead), for a relayed 'gt
// done' there to see the container's commits (docs/protocol.md, "Git").
func (s *Service) receive(ctx context.Context, w http.ResponseWriter, body io.Reader, repo, rig string, id wire.Identity, env []string) error {
	landed, err := os.CreateTemp(s.cfg.TempDir, "landed-*")
	if err != nil {
		return err
	}
	landed.Close()
	defer os.Remove(landed.Name())
	limit, record := landed.Name()+".limit", landed.Name()+".worktree"
	defer os.Remove(limit)
	defer os.Remove(record)
	penv, err := s.policyEnv(rig)
	if err != nil {
		return err
	}
	env = append(env, hook.IdentityEnv+"="+id.String(), hook.LandedEnv+"="+landed.Name(), hook.LimitEnv+"="+limit,
		fmt.Sprintf("%s=%d", hook.MaxCheckoutSizeEnv, s.cfg.MaxCheckoutSize), fmt.Sprintf("%s=%d", hook.MaxCheckoutFilesEnv, s.cfg.MaxCheckoutFiles),
		hook.WorktreeGuardEnv+"="+s.cfg.WorktreeGuard, hook.WorktreeRecordEnv+"="+record)
	env = append(env, penv...)
	err = s.run(ctx, env, body, w, receivePack(repo, s.cfg.HooksDir, s.cfg.MaxPushSize)...)
	if b, rerr := os.ReadFile(limit); rerr == nil {
		limits.Hit(limits.GitCheckout)
		s.log.Warn("push refused: its checkout in a host worktree would be over a bound", "polecat", id, "rig", rig, "setting", strings.TrimSpace(string(b)))
	}
	s.logGuard(id, rig, record)
	if err != nil {
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
