package control

import (
	"net/http"

	"github.com/polecat-sidecar/sidecar/hostd/api"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// Starts are hostd run's failed starts (sandbox.Failures): hostd run
// reports each failure and each start that succeeds; status shows what
// is recorded.
type Starts interface {
	// Fail records that id's start failed for reason (bounded), logs it,
	// and returns the record.
	Fail(id wire.Identity, reason string) (api.StartFailure, error)
	// Clear removes id's record once a start succeeded; cleared says
	// whether there was one.
	Clear(id wire.Identity) (cleared bool, err error)
	// Get is id's record, if any.
	Get(id wire.Identity) (api.StartFailure, bool)
	// List is every record, by identity.
	List() []api.StartFailure
}

// startHandlers serves PUT and DELETE /v1/polecats/<rig>/<name>/start-failure:
// hostd run's report of a start that failed, and of one that succeeded.
func startHandlers(mux *http.ServeMux, s Starts) {
	mux.HandleFunc("PUT /v1/polecats/{rig}/{name}/start-failure", func(w http.ResponseWriter, r *http.Request) {
		id := wire.Identity{Rig: r.PathValue("rig"), Name: r.PathValue("name")}
		var req api.StartReport
		if err := id.Validate(); err != nil {
			writeError(w, http.StatusBadRequest, err)
			return
		}
		if err := decodeBody(r, &req); err != nil {
			writeError(w, http.StatusBadRequest, err)
			return
		}
		rec, err := s.Fail(id, req.Reason)
		if err != nil {
			writeError(w, http.StatusInternalServerError, err)
			return
		}
		writeJSON(w, http.StatusOK, rec)
	})
	mux.HandleFunc("DELETE /v1/polecats/{rig}/{name}/start-failure", func(w http.ResponseWriter, r *http.Request) {
		id := wire.Identity{Rig: r.PathValue("rig"), Name: r.PathValue("name")}
		if err := id.Validate(); err != nil {
			writeError(w, http.StatusBadRequest, err)
			return
		}
		cleared, err := s.Clear(id)
		if err != nil {
			writeError(w, http.StatusInternalServerError, err)
			return
		}
		writeJSON(w, http.StatusOK, map[string]bool{"cleared": cleared})
	})
}
