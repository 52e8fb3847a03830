// Package control is the running hostd's local API: HTTP with JSON over a
// unix socket under <town>/.runtime/hostd (directory 0700, socket 0600),
// which the CLI subcommands (status, cert revoke) use to reach the daemon.
package control

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/polecat-sidecar/sidecar/hostd/api"

	"github.com/polecat-sidecar/sidecar/hostd/state"
	"github.com/polecat-sidecar/sidecar/internal/unixsock"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// Backend is what the daemon provides to the API.
type Backend interface {
	Status() api.Status
	// ReloadRevocations re-reads the revocation records and closes live
	// tunnels of revoked certificates, returning how many it closed.
	ReloadRevocations() (int, error)
	// Polecat is one polecat's detail.
	Polecat(id wire.Identity) (api.PolecatDetail, bool)
	// IssueCert issues a certificate and key for id, valid for ttl (0: the
	// configured lifetime), for the gt-proxy-server compatible admin API.
	IssueCert(id wire.Identity, ttl time.Duration) (api.IssuedCert, error)
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
