package control

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"

	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// PaneBackend is the pane channel's part of the Backend.
type PaneBackend interface {
	// Peek writes the polecat's pane to w (and, following, what it adds).
	Peek(ctx context.Context, id wire.Identity, lines int, follow bool, w io.Writer) error
	// Attach connects the connection upgrade gives to a tmux client on
	// the polecat's session; a refusal is its error, before upgrade.
	Attach(ctx context.Context, id wire.Identity, req wire.PaneRequest, upgrade func() (io.ReadWriteCloser, error)) error
}

// paneUpgrade is the protocol hostd attach's connection upgrades to: attach
// frames one way, the terminal's bytes the other (wire.PaneRequest).
const paneUpgrade = "polecat-pane"

// lazyWriter sends a 200 with its first byte, and flushes each write, so
// that an error before any output can still be a proper status.
type lazyWriter struct {
	w       http.ResponseWriter
	started bool
}

func (l *lazyWriter) Write(p []byte) (int, error) {
	if !l.started {
		l.w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		l.w.WriteHeader(http.StatusOK)
		l.started = true
	}
	n, err := l.w.Write(p)
	if f, ok := l.w.(http.Flusher); ok {
		f.Flush()
	}
	return n, err
}

func paneHandlers(mux *http.ServeMux, b PaneBackend) {
	mux.HandleFunc("GET /v1/pane/{rig}/{name}", func(w http.ResponseWriter, r *http.Request) {
		id := wire.Identity{Rig: r.PathValue("rig"), Name: r.PathValue("name")}
		lines, err := strconv.Atoi(r.URL.Query().Get("lines"))
		if err == nil {
			err = id.Validate()
		}
		if err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
			return
		}
		lw := &lazyWriter{w: w}
		if err := b.Peek(r.Context(), id, lines, r.URL.Query().Get("follow") == "1", lw); err != nil && !lw.started {
			writeJSON(w, http.StatusBadGateway, map[string]string{"error": err.Error()})
		}
	})
	mux.HandleFunc("POST /v1/pane/{rig}/{name}/attach", func(w http.ResponseWriter, r *http.Request) {
		id := wire.Identity{Rig: r.PathValue("rig"), Name: r.PathValue("name")}
		q := r.URL.Query()
		cols, cerr := strconv.ParseUint(q.Get("cols"), 10, 16)
		rows, rerr := strconv.ParseUint(q.Get("rows"), 10, 16)
		req := wire.PaneRequest{Op: wire.PaneAttach, Write: q.Get("write") == "1", Cols: uint16(cols), Rows: uint16(rows)}
		err := errors.Join(id.Validate(), cerr, rerr)
		if err == nil {
			err = req.Validate()
		}
		if err == nil && r.Header.Get("Upgrade") != paneUpgrade {
			err = fmt.Errorf("attach needs Upgrade: %s", paneUpgrade)
		}
		if err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
			return
		}
		upgraded := false
		err = b.Attach(r.Context(), id, req, func() (io.ReadWriteCloser, error) {
			conn, buf, err := http.NewResponseController(w).Hijack()
			if err != nil {
				return nil, err
			}
			upgraded = true
			_, err = buf.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: " + paneUpgrade + "\r\nConnection: Upgrade\r\n\r\n")
			if err == nil {
				err = buf.Flush()
			}
			return bufConn{Conn: conn, r: buf.Reader}, err
		})
		if err != nil && !upgraded {
			writeJSON(w, http.StatusBadGateway, map[string]string{"error": err.Error()})
		}
	})
}

// bufConn reads what the server had already buffered first.
type bufConn struct {
	net.Conn
	r *bufio.Reader
}

func (c bufConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// Peek streams the polecat's pane to w until it ends or ctx does.
func (c *Client) Peek(ctx context.Context, id wire.Identity, lines int, follow bool, w io.Writer) error {
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
func (c *Client) Attach(ctx context.Context, id wire.Identity, write bool, cols, rows uint16) (io.ReadWriteCloser, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", c.path)
	if err != nil {
		return nil, fmt.Errorf("%w (no daemon answers on %s; start it with 'hostd serve')", ErrNotRunning, c.path)
	}
	w := "0"
	if write {
		w = "1"
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, fmt.Sprintf("http://hostd/v1/pane/%s/%s/attach?write=%s&cols=%d&rows=%d", id.Rig, id.Name, w, cols, rows), nil)
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", paneUpgrade)
	if err := req.Write(conn); err != nil {
		conn.Close()
		return nil, fmt.Errorf("asking hostd to attach: %w", err)
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("asking hostd to attach: %w", err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		defer conn.Close()
		var e struct {
			Error string `json:"error"`
		}
		_ = json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&e)
		return nil, fmt.Errorf("hostd could not attach: %s %s", resp.Status, e.Error)
	}
	return bufConn{Conn: conn, r: br}, nil
}
