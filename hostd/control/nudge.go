package control

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/polecat-sidecar/sidecar/hostd/api"

	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// Nudges is the nudge queue (nudge.Service).
type Nudges interface {
	// Nudge queues a nudge and waits up to req.Wait for its outcome.
	Nudge(ctx context.Context, id wire.Identity, req api.NudgeRequest) (api.NudgeOutcome, error)
	// List is a polecat's queue, in delivery order.
	List(id wire.Identity) []api.NudgeItem
	// Cancel removes a queued nudge.
	Cancel(nudgeID string) (api.NudgeOutcome, error)
	// Depth is how many nudges wait for each polecat that has any.
	Depth() map[wire.Identity]int
}

// maxNudgeBody bounds a nudge request: the text, escaped, and the rest.
const maxNudgeBody = 8*wire.MaxNudgeText + 4<<10

// nudgeHandlers serves the nudge queue; known refuses a nudge to a
// polecat hostd has never heard of (Services.known).
func nudgeHandlers(mux *http.ServeMux, b Nudges, known func(wire.Identity) error) {
	mux.HandleFunc("POST /v1/nudges/{rig}/{name}", func(w http.ResponseWriter, r *http.Request) {
		id := wire.Identity{Rig: r.PathValue("rig"), Name: r.PathValue("name")}
		var req api.NudgeRequest
		err := id.Validate()
		if err == nil {
			d := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxNudgeBody))
			d.DisallowUnknownFields()
			err = d.Decode(&req)
		}
		if err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
			return
		}
		if err := known(id); err != nil {
			writeJSON(w, http.StatusNotFound, map[string]string{"error": err.Error()})
			return
		}
		o, err := b.Nudge(r.Context(), id, req)
		if err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
			return
		}
		writeJSON(w, http.StatusOK, o)
	})
	mux.HandleFunc("GET /v1/nudges/{rig}/{name}", func(w http.ResponseWriter, r *http.Request) {
		id := wire.Identity{Rig: r.PathValue("rig"), Name: r.PathValue("name")}
		if err := id.Validate(); err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
			return
		}
		writeJSON(w, http.StatusOK, b.List(id))
	})
	mux.HandleFunc("DELETE /v1/nudges/{id}", func(w http.ResponseWriter, r *http.Request) {
		o, err := b.Cancel(r.PathValue("id"))
		if err != nil {
			writeJSON(w, http.StatusNotFound, map[string]string{"error": err.Error()})
			return
		}
		writeJSON(w, http.StatusOK, o)
	})
}
