// Package control is the running hostd's local API: HTTP with JSON over a
// unix socket under <town>/.runtime/hostd (directory 0700, socket 0600),
// which the CLI subcommands (status, cert revoke) use to reach the daemon.
package control

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"syscall"
	"time"

	"github.com/polecat-sidecar/sidecar/heartbeat"
	"github.com/polecat-sidecar/sidecar/hostd/state"
	"github.com/polecat-sidecar/sidecar/internal/unixsock"
	"github.com/polecat-sidecar/sidecar/tunnel"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// Polecat is one polecat as hostd status shows it: its judged state, its
// tunnel (when connected) and its last beat.
type Polecat struct {
	Identity wire.Identity `json:"identity"`
	Rig      string        `json:"rig"`
	Name     string        `json:"name"`
	// State is working, idle, stale, disconnected, dead or revoked, since
	// StateSince, for Reason. Restored means it is the last known state
	// from before hostd restarted, the agent not being back yet.
	State      string    `json:"state"`
	StateSince time.Time `json:"state_since"`
	Reason     string    `json:"reason"`
	Restored   bool      `json:"restored,omitempty"`
	// The tunnel, when connected.
	Connected   bool      `json:"connected"`
	Transport   string    `json:"transport,omitempty"`
	Remote      string    `json:"remote,omitempty"`
	Since       time.Time `json:"connected_since,omitempty"`
	RTTMillis   float64   `json:"rtt_ms"`
	Streams     int       `json:"streams"`
	CertSerial  string    `json:"cert_serial,omitempty"`
	CertExpires time.Time `json:"cert_expires,omitempty"`
	// From the last beat.
	LastBeat     time.Time `json:"last_beat,omitempty"`
	SessionState string    `json:"session_state,omitempty"`
	Command      string    `json:"command,omitempty"`
	Processes    int       `json:"processes"`
	CPUPercent   float64   `json:"cpu_percent"`
	RSSBytes     uint64    `json:"rss_bytes"`
	IdleSeconds  float64   `json:"idle_seconds"`
	// Nudges is how many nudges wait in its queue.
	Nudges int `json:"nudges"`
}

// PolecatDetail is one polecat with its last beat and recent state
// changes.
type PolecatDetail struct {
	Polecat
	Beat   *heartbeat.Beat   `json:"beat,omitempty"`
	Events []heartbeat.Event `json:"events"`
}

// UpstreamItem is a branch waiting to be pushed from a rig's .repo.git to
// its origin.
type UpstreamItem struct {
	Rig    string `json:"rig"`
	Branch string `json:"branch"`
	// Owner is the polecat it is queued for; the queue takes turns.
	Owner     string    `json:"owner,omitempty"`
	Since     time.Time `json:"since"`
	Attempts  int       `json:"attempts"`
	LastError string    `json:"last_error,omitempty"`
	NextTry   time.Time `json:"next_try"`
}

// Status is the daemon's state.
type Status struct {
	Version  string         `json:"version"`
	Listen   string         `json:"listen"`
	Started  time.Time      `json:"started"`
	Polecats []Polecat      `json:"polecats"`
	Upstream []UpstreamItem `json:"upstream"`
	// Listeners is each transport's accept loop: a stopped or failing one
	// refuses its tunnels while everything else looks fine.
	Listeners []tunnel.ListenerHealth `json:"listeners"`
	// SyncConflicts counts the paths data merges left in conflict since
	// hostd started (hostd sync log has them).
	SyncConflicts int `json:"sync_conflicts"`
}

// Backend is what the daemon provides to the API.
type Backend interface {
	Status() Status
	// ReloadRevocations re-reads the revocation records and closes live
	// tunnels of revoked certificates, returning how many it closed.
	ReloadRevocations() (int, error)
	// Polecat is one polecat's detail.
	Polecat(id wire.Identity) (PolecatDetail, bool)
	// IssueCert issues a certificate and key for id, valid for ttl (0: the
	// configured lifetime), for the gt-proxy-server compatible admin API.
	IssueCert(id wire.Identity, ttl time.Duration) (IssuedCert, error)
	// Revoke revokes by serial or <rig>/<name>, persistently, and closes
	// the live tunnels that stood on what it revoked.
	Revoke(target string) (revoked int, err error)
	SyncBackend
	NudgeBackend
	PaneBackend
}

// Listen opens the town's control socket (state.Dir.Socket), making the
// runtime directory 0700. A stale socket left by a crashed daemon is
// replaced; a live one is an error.
func Listen(town string) (net.Listener, error) {
	dir := state.For(town)
	if err := dir.Ensure(); err != nil {
		return nil, err
	}
	ln, err := unixsock.Listen(dir.Socket())
	if errors.Is(err, unixsock.ErrInUse) {
		return nil, fmt.Errorf("another hostd is already serving this town (socket %s answers)", dir.Socket())
	}
	if err != nil {
		return nil, fmt.Errorf("control socket: %w", err)
	}
	return ln, nil
}

// Handler serves the API for b.
func Handler(b Backend) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/status", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, b.Status())
	})
	mux.HandleFunc("GET /v1/polecats/{rig}/{name}", func(w http.ResponseWriter, r *http.Request) {
		id := wire.Identity{Rig: r.PathValue("rig"), Name: r.PathValue("name")}
		d, ok := b.Polecat(id)
		if !ok {
			writeJSON(w, http.StatusNotFound, map[string]string{"error": fmt.Sprintf("hostd knows no polecat %s", id)})
			return
		}
		writeJSON(w, http.StatusOK, d)
	})
	adminHandlers(mux, b)
	syncHandlers(mux, b)
	nudgeHandlers(mux, b)
	paneHandlers(mux, b)
	mux.HandleFunc("POST /v1/revocations/reload", func(w http.ResponseWriter, r *http.Request) {
		n, err := b.ReloadRevocations()
		if err != nil {
			writeJSON(w, http.StatusInternalServerError, map[string]string{"error": err.Error()})
			return
		}
		writeJSON(w, http.StatusOK, map[string]int{"closed": n})
	})
	return mux
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// ErrNotRunning means no daemon answers on the town's control socket.
var ErrNotRunning = errors.New("hostd is not running")

// Client talks to a running daemon.
type Client struct {
	path string
	hc   *http.Client
}

// NewClient returns a client for the daemon serving town.
func NewClient(town string) *Client {
	path := state.For(town).Socket()
	return &Client{path: path, hc: &http.Client{
		Timeout: 10 * time.Second,
		Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", path)
		}},
	}}
}

// Status fetches the daemon's status.
func (c *Client) Status(ctx context.Context) (Status, error) {
	var s Status
	err := c.do(ctx, http.MethodGet, "/v1/status", &s)
	return s, err
}

// Polecat fetches one polecat's detail.
func (c *Client) Polecat(ctx context.Context, id wire.Identity) (PolecatDetail, error) {
	var d PolecatDetail
	err := c.do(ctx, http.MethodGet, "/v1/polecats/"+id.Rig+"/"+id.Name, &d)
	return d, err
}

// ReloadRevocations tells the daemon to re-read revocations and close the
// tunnels of revoked certificates; it returns how many it closed.
func (c *Client) ReloadRevocations(ctx context.Context) (int, error) {
	var r struct {
		Closed int `json:"closed"`
	}
	err := c.do(ctx, http.MethodPost, "/v1/revocations/reload", &r)
	return r.Closed, err
}

func (c *Client) do(ctx context.Context, method, path string, out any) error {
	return c.doWith(ctx, c.hc, method, path, nil, out)
}

// doLong is do for calls that last as long as a transfer: no timeout but
// ctx's.
func (c *Client) doLong(ctx context.Context, method, path string, out any) error {
	return c.doLongJSON(ctx, method, path, nil, out)
}

// doLongJSON is doLong sending in as a JSON body (none when nil).
func (c *Client) doLongJSON(ctx context.Context, method, path string, in, out any) error {
	hc := *c.hc
	hc.Timeout = 0
	return c.doWith(ctx, &hc, method, path, in, out)
}

// openLong starts a long call and returns its body, for answers that
// stream.
func (c *Client) openLong(ctx context.Context, method, path string) (io.ReadCloser, error) {
	hc := *c.hc
	hc.Timeout = 0
	resp, err := c.send(ctx, &hc, method, path, nil)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		return nil, statusError(method, path, resp)
	}
	return resp.Body, nil
}

// send makes one call, with in as its JSON body unless nil, saying
// clearly when no daemon answers.
func (c *Client) send(ctx context.Context, hc *http.Client, method, path string, in any) (*http.Response, error) {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return nil, fmt.Errorf("encoding the request: %w", err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://hostd"+path, body)
	if err != nil {
		return nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		if errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ECONNREFUSED) {
			return nil, fmt.Errorf("%w (no daemon answers on %s; start it with 'hostd serve')", ErrNotRunning, c.path)
		}
		return nil, fmt.Errorf("asking hostd (%s): %w", c.path, err)
	}
	return resp, nil
}

func (c *Client) doWith(ctx context.Context, hc *http.Client, method, path string, in, out any) error {
	resp, err := c.send(ctx, hc, method, path, in)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return statusError(method, path, resp)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("reading hostd's answer: %w", err)
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("decoding hostd's answer: %w", err)
	}
	return nil
}

// statusError is a failed call, with the reason hostd gave.
func statusError(method, path string, resp *http.Response) error {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var e struct {
		Error string `json:"error"`
	}
	_ = json.Unmarshal(body, &e)
	return fmt.Errorf("hostd %s %s: %s %s", method, path, resp.Status, e.Error)
}
