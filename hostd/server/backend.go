package server

import (
	"context"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/polecat-sidecar/sidecar/hostd/api"

	"github.com/polecat-sidecar/sidecar/hostd/control"
	"github.com/polecat-sidecar/sidecar/hostd/nudge"
	"github.com/polecat-sidecar/sidecar/hostd/pki"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// The control API's backend: each answer comes from the service that
// owns it.
var _ control.Backend = (*Server)(nil)

// Status is every polecat hostd knows, connected or not, and the upstream
// queue.
func (s *Server) Status() api.Status {
	st := api.Status{Version: s.cfg.Version, Listen: s.Addr(), Started: s.started, Polecats: s.live.Rows()}
	depth := s.nudge.Depth()
	for i := range st.Polecats {
		st.Polecats[i].Nudges = depth[st.Polecats[i].Identity]
	}
	if ln := s.listener(); ln != nil {
		st.Listeners = ln.Health()
	}
	st.SyncConflicts = s.data.Conflicts()
	if s.queue != nil {
		for _, p := range s.queue.Pending() {
			st.Upstream = append(st.Upstream, api.UpstreamItem(p))
		}
	}
	return st
}

// Polecat is one polecat's detail.
func (s *Server) Polecat(id wire.Identity) (api.PolecatDetail, bool) {
	d, ok := s.live.Detail(id)
	d.Nudges = s.nudge.Depth()[id]
	return d, ok
}

// ReloadRevocations re-reads the revocation records and closes the live
// tunnels of revoked certificates.
func (s *Server) ReloadRevocations() (int, error) { return s.certs.ReloadRevocations() }

// IssueCert issues a certificate and key for the admin API.
func (s *Server) IssueCert(id wire.Identity, ttl time.Duration) (api.IssuedCert, error) {
	certPEM, keyPEM, cert, err := s.certs.IssueKeyPair(id, ttl)
	if err != nil {
		return api.IssuedCert{}, err
	}
	return api.IssuedCert{CN: id.CommonName(), Cert: string(certPEM), Key: string(keyPEM), CA: string(s.certs.CA().CertPEM()),
		Serial: pki.SerialOf(cert), ExpiresAt: cert.NotAfter}, nil
}

// Revoke revokes persistently and closes the live tunnels concerned.
func (s *Server) Revoke(target string) (int, error) { return s.certs.Revoke(target) }

// SyncPush sends a polecat's host data into its container.
func (s *Server) SyncPush(ctx context.Context, id wire.Identity, progress func(api.SyncProgress)) (wire.SyncResult, error) {
	return s.data.Push(ctx, id, progress)
}

// SyncPull takes a polecat's data and merges it into the host's.
func (s *Server) SyncPull(ctx context.Context, id wire.Identity, o api.PullOptions, progress func(api.SyncProgress)) (wire.SyncResult, error) {
	return s.data.Pull(ctx, id, o, progress)
}

// SyncLog is the transfer journal.
func (s *Server) SyncLog() ([]api.SyncRecord, error) { return s.data.Journal() }

// SyncStatus is the data policy and each connected polecat's host root.
func (s *Server) SyncStatus() api.SyncStatus {
	p := s.data.Policy()
	st := api.SyncStatus{Include: p.Include, Exclude: p.Exclude, MaxStoredBytes: s.data.MaxStoredBytes()}
	for id := range s.reg.Snapshot() {
		r := api.SyncRoot{Polecat: id, Host: s.data.Root(id)}
		r.StoredBytes, _ = s.data.Stored(id)
		r.EscapingLinks, _ = s.data.EscapingLinks(id)
		st.Roots = append(st.Roots, r)
	}
	slices.SortFunc(st.Roots, func(a, b api.SyncRoot) int { return strings.Compare(a.Polecat.String(), b.Polecat.String()) })
	return st
}

// Nudge queues a nudge and waits up to req.Wait for what becomes of it.
func (s *Server) Nudge(ctx context.Context, id wire.Identity, req api.NudgeRequest) (api.NudgeOutcome, error) {
	it, dropped, err := s.nudge.Enqueue(nudge.Request{Polecat: id, Text: req.Text, Mode: req.Mode, Priority: req.Priority, TTL: req.TTL})
	if err != nil {
		return api.NudgeOutcome{}, err
	}
	wait := req.Wait
	if it.Mode == wire.NudgeQueue {
		wait = 0
	}
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	o, err := s.nudge.Wait(ctx, it.ID)
	o.Dropped = dropped
	return o, err
}

// NudgeList is a polecat's nudge queue.
func (s *Server) NudgeList(id wire.Identity) []api.NudgeItem { return s.nudge.List(id) }

// NudgeCancel removes a queued nudge.
func (s *Server) NudgeCancel(nudgeID string) (api.NudgeOutcome, error) {
	return s.nudge.Cancel(nudgeID)
}

// Peek writes a polecat's pane to w.
func (s *Server) Peek(ctx context.Context, id wire.Identity, lines int, follow bool, w io.Writer) error {
	return s.pane.Peek(ctx, id, lines, follow, w)
}

// Attach connects an operator's terminal to the polecat's session.
func (s *Server) Attach(ctx context.Context, id wire.Identity, req wire.PaneRequest, upgrade func() (io.ReadWriteCloser, error)) error {
	return s.pane.Attach(ctx, id, req, upgrade)
}
