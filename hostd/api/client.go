// Package api is what hostd's CLI and the running daemon exchange over the
// control socket: the JSON types of each answer and the client that asks.
// It is a leaf (of ours it imports only internal/unixsock): where an
// answer shows a beat, a listener's health, an identity or a sync result,
// it has its own type with the same JSON, which hostd/control converts
// the services' values to; the caller gives the socket's path.
package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"syscall"
	"time"

	"github.com/polecat-sidecar/sidecar/internal/unixsock"
)

// ErrNotRunning means no daemon answers on the town's control socket.
var ErrNotRunning = errors.New("hostd is not running")

// Client talks to a running daemon.
type Client struct {
	path string
	hc   *http.Client
}

// NewSocketClient returns a client for the daemon listening on the unix socket
// at path (a town's is state.For(town).Socket()).
func NewSocketClient(path string) *Client {
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
func (c *Client) Polecat(ctx context.Context, id Identity) (PolecatDetail, error) {
	var d PolecatDetail
	err := c.do(ctx, http.MethodGet, "/v1/polecats/"+id.Rig+"/"+id.Name, &d)
	return d, err
}

// Forget removes what the daemon keeps of a polecat whose tunnel is down
// (Forgotten says what), waiting up to wait for a tunnel being closed
// (its certificates just revoked) to be down; 0 refuses a connected
// polecat at once.
func (c *Client) Forget(ctx context.Context, id Identity, wait time.Duration) (Forgotten, error) {
	var f Forgotten
	path := "/v1/polecats/" + id.Rig + "/" + id.Name
	if wait <= 0 {
		return f, c.do(ctx, http.MethodDelete, path, &f)
	}
	ctx, cancel := context.WithTimeout(ctx, wait+c.hc.Timeout)
	defer cancel()
	return f, c.doLong(ctx, http.MethodDelete, path+"?wait="+url.QueryEscape(wait.String()), &f)
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

// Health says whether the daemon answers: nil when it does,
// ErrNotRunning (wrapped) when nothing listens on the socket.
func (c *Client) Health(ctx context.Context) error {
	var h struct {
		Status string `json:"status"`
	}
	return c.do(ctx, http.MethodGet, "/v1/admin/health", &h)
}

// ReportStartFailure tells the daemon that hostd run could not start
// polecat id, and why; it answers what it recorded (the reason bounded).
func (c *Client) ReportStartFailure(ctx context.Context, id Identity, reason string) (StartFailure, error) {
	var f StartFailure
	err := c.doWith(ctx, c.hc, http.MethodPut, startFailurePath(id), StartReport{Reason: reason}, &f)
	return f, err
}

// ClearStartFailure tells the daemon that hostd run started polecat id;
// cleared says whether a failure was recorded for it.
func (c *Client) ClearStartFailure(ctx context.Context, id Identity) (cleared bool, err error) {
	var r struct {
		Cleared bool `json:"cleared"`
	}
	err = c.do(ctx, http.MethodDelete, startFailurePath(id), &r)
	return r.Cleared, err
}

func startFailurePath(id Identity) string {
	return "/v1/polecats/" + id.Rig + "/" + id.Name + "/start-failure"
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
		return nil, c.unreachable(err)
	}
	return resp, nil
}

// unreachable says why asking the daemon on the socket failed with err:
// a socket path longer than the system takes, no daemon (ErrNotRunning),
// or err itself.
func (c *Client) unreachable(err error) error {
	if long := unixsock.CheckPath(c.path); long != nil {
		return fmt.Errorf("asking hostd: %w", long)
	}
	if errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ECONNREFUSED) {
		return fmt.Errorf("%w (no daemon answers on %s; start it with 'hostd serve')", ErrNotRunning, c.path)
	}
	return fmt.Errorf("asking hostd (%s): %w", c.path, err)
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

// Error is the daemon refusing a call: the HTTP status it answered and
// the reason it gave, which is the whole message an operator sees.
type Error struct {
	// Status is the HTTP status code (http.StatusNotFound, ...).
	Status int
	// Message is hostd's reason, or, when it gave none, what was asked
	// and answered.
	Message string
}

func (e *Error) Error() string { return e.Message }

// statusError is a failed call: hostd's reason when it gave one, else the
// request and its status with a hint (a CLI newer than the daemon asks
// for routes the daemon lacks).
func statusError(method, path string, resp *http.Response) error {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var e struct {
		Error string `json:"error"`
	}
	_ = json.Unmarshal(body, &e)
	msg := e.Error
	if msg == "" {
		msg = fmt.Sprintf("hostd answered %s %s with %s and no reason: is the running hostd older than this command? ('hostd version' shows this command's version, 'hostd status' the daemon's)", method, path, resp.Status)
	}
	return &Error{Status: resp.StatusCode, Message: msg}
}
