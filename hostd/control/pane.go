package control

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/polecat-sidecar/sidecar/hostd/api"

	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// Panes is the pane channel's host half (pane.Service).
type Panes interface {
	// Peek writes the polecat's pane to w (and, following, what it adds).
	Peek(ctx context.Context, id wire.Identity, lines int, follow bool, w io.Writer) error
	// Attach connects the connection upgrade gives to a tmux client on
	// the polecat's session; a refusal is its error, before upgrade.
	Attach(ctx context.Context, id wire.Identity, req wire.PaneRequest, upgrade func() (io.ReadWriteCloser, error)) error
}

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

func paneHandlers(mux *http.ServeMux, b Panes) {
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
		if err == nil && r.Header.Get("Upgrade") != api.PaneUpgrade {
			err = fmt.Errorf("attach needs Upgrade: %s", api.PaneUpgrade)
		}
		if err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
			return
		}
		up := &upgrader{w: w, proto: api.PaneUpgrade}
		if err := b.Attach(r.Context(), id, req, up.upgrade); err != nil && !up.done {
			writeJSON(w, http.StatusBadGateway, map[string]string{"error": err.Error()})
		}
	})
}

// upgrader switches an HTTP request's connection to proto: a raw
// connection for the service once it is ready, an error status before.
type upgrader struct {
	w     http.ResponseWriter
	proto string
	done  bool // the connection is the service's: no status can follow
}

// upgrade answers 101 and gives the connection.
func (u *upgrader) upgrade() (io.ReadWriteCloser, error) {
	conn, buf, err := http.NewResponseController(u.w).Hijack()
	if err != nil {
		return nil, err
	}
	u.done = true
	_, err = buf.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: " + u.proto + "\r\nConnection: Upgrade\r\n\r\n")
	if err == nil {
		err = buf.Flush()
	}
	return api.BufferedConn{Conn: conn, R: buf.Reader}, err
}
