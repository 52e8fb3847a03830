package control

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"time"

	"github.com/polecat-sidecar/sidecar/hostd/api"

	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// Data is the data channel's host half (data.Service).
type Data interface {
	// Push sends a polecat's host data into its container, and Pull takes
	// its container's and merges it into the host's; both call progress
	// (when not nil) as the transfer goes.
	Push(ctx context.Context, id wire.Identity, progress func(api.SyncProgress)) (wire.SyncResult, error)
	Pull(ctx context.Context, id wire.Identity, o api.PullOptions, progress func(api.SyncProgress)) (wire.SyncResult, error)
	// Journal is the transfer journal.
	Journal() ([]api.SyncRecord, error)
	// Status is the data policy and each connected polecat's host root.
	Status() api.SyncStatus
	// Conflicts counts the conflict copies transfers have made.
	Conflicts() int
}

func syncHandlers(mux *http.ServeMux, b Data) {
	transfer := func(pull bool) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			id := wire.Identity{Rig: r.PathValue("rig"), Name: r.PathValue("name")}
			if err := id.Validate(); err != nil {
				writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
				return
			}
			var progress func(api.SyncProgress)
			var stream *progressStream
			if r.URL.Query().Get("progress") == "1" {
				stream = newProgressStream(w)
				progress = stream.set
				defer stream.stop()
			}
			var res wire.SyncResult
			var err error
			if pull {
				q := r.URL.Query()
				res, err = b.Pull(r.Context(), id, api.PullOptions{DryRun: q.Get("dry_run") == "1", AllowDeletes: q.Get("allow_deletes") == "1"}, progress)
			} else {
				res, err = b.Push(r.Context(), id, progress)
			}
			if err != nil && res.Error == "" {
				res.Error = err.Error()
			}
			if stream != nil {
				stream.finish(res)
				return
			}
			writeJSON(w, http.StatusOK, apiSyncResult(res))
		}
	}
	mux.HandleFunc("POST /v1/sync/{rig}/{name}/push", transfer(false))
	mux.HandleFunc("POST /v1/sync/{rig}/{name}/pull", transfer(true))
	mux.HandleFunc("GET /v1/sync/log", func(w http.ResponseWriter, r *http.Request) {
		recs, err := b.Journal()
		if err != nil {
			writeJSON(w, http.StatusInternalServerError, map[string]string{"error": err.Error()})
			return
		}
		writeJSON(w, http.StatusOK, recs)
	})
	mux.HandleFunc("GET /v1/sync/status", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, b.Status())
	})
}

// progressStream writes a transfer's progress as JSON lines, the latest
// about four times a second, then the result.
type progressStream struct {
	w      http.ResponseWriter
	rc     *http.ResponseController
	mu     sync.Mutex
	latest *api.SyncProgress
	sent   *api.SyncProgress
	done   chan struct{}
	once   sync.Once
}

func newProgressStream(w http.ResponseWriter) *progressStream {
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	p := &progressStream{w: w, rc: http.NewResponseController(w), done: make(chan struct{})}
	go func() {
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-p.done:
				return
			case <-t.C:
				p.flush()
			}
		}
	}()
	return p
}

func (p *progressStream) set(sp api.SyncProgress) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.latest = &sp
}

// flush writes the latest progress if it moved.
func (p *progressStream) flush() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.latest == nil || p.latest == p.sent {
		return
	}
	p.sent = p.latest
	_ = json.NewEncoder(p.w).Encode(api.SyncLine{Progress: p.latest})
	_ = p.rc.Flush()
}

func (p *progressStream) stop() { p.once.Do(func() { close(p.done) }) }

// finish writes the result as the last line.
func (p *progressStream) finish(res wire.SyncResult) {
	p.stop()
	p.mu.Lock()
	defer p.mu.Unlock()
	line := apiSyncResult(res)
	_ = json.NewEncoder(p.w).Encode(api.SyncLine{Result: &line})
}
