package control

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/polecat-sidecar/sidecar/hostd/api"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// Sandboxes is the sandbox channel's host half (sandbox.Streams).
type Sandboxes interface {
	// Open waits up to wait for the polecat's agent (an error wrapping
	// api.ErrNotConnected when it does not come), opens a sandbox stream
	// to it and connects it to the connection upgrade gives.
	Open(ctx context.Context, id wire.Identity, wait time.Duration, upgrade func() (io.ReadWriteCloser, error)) error
}

// maxSandboxWait bounds how long one request waits for a polecat's agent.
const maxSandboxWait = 5 * time.Minute

// sandboxHandlers serves POST /v1/sandbox/<rig>/<name>?wait=D, upgraded to
// api.SandboxUpgrade: hostd run's operations in the polecat's sandbox.
func sandboxHandlers(mux *http.ServeMux, b Sandboxes) {
	mux.HandleFunc("POST /v1/sandbox/{rig}/{name}", func(w http.ResponseWriter, r *http.Request) {
		id := wire.Identity{Rig: r.PathValue("rig"), Name: r.PathValue("name")}
		err := id.Validate()
		var wait time.Duration
		if v := r.URL.Query().Get("wait"); err == nil && v != "" {
			if wait, err = time.ParseDuration(v); err != nil || wait < 0 || wait > maxSandboxWait {
				err = fmt.Errorf("wait %q: a duration from 0 to %v", v, maxSandboxWait)
			}
		}
		if err == nil && r.Header.Get("Upgrade") != api.SandboxUpgrade {
			err = fmt.Errorf("the sandbox channel needs Upgrade: %s", api.SandboxUpgrade)
		}
		if err != nil {
			writeError(w, http.StatusBadRequest, err)
			return
		}
		up := &upgrader{w: w, proto: api.SandboxUpgrade}
		err = b.Open(r.Context(), id, wait, up.upgrade)
		switch {
		case err == nil || up.done:
		case errors.Is(err, api.ErrNotConnected):
			writeError(w, http.StatusGatewayTimeout, err)
		default:
			writeError(w, http.StatusBadGateway, err)
		}
	})
}
