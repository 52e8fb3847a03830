package api

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
)

// PaneUpgrade is the protocol hostd attach's connection upgrades to: attach
// frames one way, the terminal's bytes the other (wire.PaneRequest).
const PaneUpgrade = "polecat-pane"

// BufferedConn reads what the server had already buffered first.
type BufferedConn struct {
	net.Conn
	// R holds what was read past the HTTP exchange.
	R *bufio.Reader
}

// Read reads the buffered bytes first, then the connection.
func (c BufferedConn) Read(p []byte) (int, error) { return c.R.Read(p) }

// Peek streams the polecat's pane to w until it ends or ctx does.
func (c *Client) Peek(ctx context.Context, id Identity, lines int, follow bool, w io.Writer) error {
	path := fmt.Sprintf("/v1/pane/%s/%s?lines=%d", id.Rig, id.Name, lines)
	if follow {
		path += "&follow=1"
	}
	body, err := c.openLong(ctx, http.MethodGet, path)
	if err != nil {
		return err
	}
	defer body.Close()
	if _, err := io.Copy(w, body); err != nil && ctx.Err() == nil {
		return fmt.Errorf("reading the pane: %w", err)
	}
	return nil
}

// Attach opens an attach connection: write attach frames to it, read the
// terminal's output from it.
func (c *Client) Attach(ctx context.Context, id Identity, write bool, cols, rows uint16) (io.ReadWriteCloser, error) {
	w := "0"
	if write {
		w = "1"
	}
	return c.upgrade(ctx, fmt.Sprintf("/v1/pane/%s/%s/attach?write=%s&cols=%d&rows=%d", id.Rig, id.Name, w, cols, rows), PaneUpgrade, "attach")
}

// upgrade POSTs path asking to switch its connection to proto, and
// returns the connection once hostd has; hostd's refusal says it could
// not do what.
func (c *Client) upgrade(ctx context.Context, path, proto, what string) (io.ReadWriteCloser, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", c.path)
	if err != nil {
		return nil, c.unreachable(err)
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://hostd"+path, nil)
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", proto)
	if err := req.Write(conn); err != nil {
		conn.Close()
		return nil, fmt.Errorf("asking hostd to %s: %w", what, err)
	}
	stop := context.AfterFunc(ctx, func() { conn.Close() }) // a long wait for the answer
	defer stop()
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("asking hostd to %s: %w", what, err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		defer conn.Close()
		return nil, fmt.Errorf("hostd could not %s: %w", what, statusError(req.Method, req.URL.Path, resp))
	}
	return BufferedConn{Conn: conn, R: br}, nil
}
