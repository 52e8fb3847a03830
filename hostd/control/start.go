package control

import (
	"net/http"

	"github.com/polecat-sidecar/sidecar/hostd/api"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// Starts are hostd run's failed starts (sandbox.Starts): hostd run
// reports each failure and each start that succeeds; status shows what
// is recorded.
type Starts interface {
	// Failed records that id's start failed for reason (bounded), logs
	// it, and returns the record.
	Failed(id wire.Identity, reason string) (api.StartFailure, error)
	// Started removes id's record: a start succeeded; cleared says
	// whether there was one.
	Started(id wire.Identity) (cleared bool, err error)
	// Failure is id's record, if any.
	Failure(id wire.Identity) (api.StartFailure, bool)
	// Failures is every record, by identity.
	Failures() []api.StartFailure
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
		rec, err := s.Failed(id, req.Reason)
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
		cleared, err := s.Started(id)
		if err != nil {
			writeError(w, http.StatusInternalServerError, err)
			return
		}
		writeJSON(w, http.StatusOK, map[string]bool{"cleared": cleared})
	})
}
