package control

import (
	"context"
	"net/http"
	"net/url"
	"time"

	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// SyncRecord is one data transfer, as hostd sync log shows it.
type SyncRecord struct {
	Time     time.Time     `json:"time"`
	Polecat  string        `json:"polecat"`
	Op       string        `json:"op"`
	Reason   string        `json:"reason,omitempty"`
	DryRun   bool          `json:"dry_run,omitempty"`
	Files    int           `json:"files"`
	Bytes    int64         `json:"bytes"`
	Applied  int           `json:"applied,omitempty"`
	Merged   int           `json:"merged,omitempty"`
	Conflict int           `json:"conflicted,omitempty"`
	Deleted  int           `json:"deleted,omitempty"`
	Kept     int           `json:"kept,omitempty"`
	Duration time.Duration `json:"duration"`
	Error    string        `json:"error,omitempty"`
}

// SyncRoot is where one connected polecat's data lives on the host.
type SyncRoot struct {
	Polecat wire.Identity `json:"polecat"`
	Host    string        `json:"host"`
}

// SyncStatus is the data channel's configuration and each connected
// polecat's host data root (the container's is the agent's --data-root).
type SyncStatus struct {
	Include []string   `json:"include"`
	Exclude []string   `json:"exclude,omitempty"`
	Roots   []SyncRoot `json:"roots"`
}

// SyncBackend is the data channel's part of the Backend.
type SyncBackend interface {
	SyncPush(ctx context.Context, id wire.Identity) (wire.SyncResult, error)
	SyncPull(ctx context.Context, id wire.Identity, dryRun bool) (wire.SyncResult, error)
	SyncLog() ([]SyncRecord, error)
	SyncStatus() SyncStatus
}

func syncHandlers(mux *http.ServeMux, b SyncBackend) {
	transfer := func(pull bool) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			id := wire.Identity{Rig: r.PathValue("rig"), Name: r.PathValue("name")}
			if err := id.Validate(); err != nil {
				writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
				return
			}
			var res wire.SyncResult
			var err error
			if pull {
				res, err = b.SyncPull(r.Context(), id, r.URL.Query().Get("dry_run") == "1")
			} else {
				res, err = b.SyncPush(r.Context(), id)
			}
			if err != nil && res.Error == "" {
				res.Error = err.Error()
			}
			writeJSON(w, http.StatusOK, res)
		}
	}
	mux.HandleFunc("POST /v1/sync/{rig}/{name}/push", transfer(false))
	mux.HandleFunc("POST /v1/sync/{rig}/{name}/pull", transfer(true))
	mux.HandleFunc("GET /v1/sync/log", func(w http.ResponseWriter, r *http.Request) {
		recs, err := b.SyncLog()
		if err != nil {
			writeJSON(w, http.StatusInternalServerError, map[string]string{"error": err.Error()})
			return
		}
		writeJSON(w, http.StatusOK, recs)
	})
	mux.HandleFunc("GET /v1/sync/status", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, b.SyncStatus())
	})
}

// SyncPush asks the daemon to send a polecat's host data into its
// container, and waits for the result.
func (c *Client) SyncPush(ctx context.Context, id wire.Identity) (wire.SyncResult, error) {
	var res wire.SyncResult
	err := c.doLong(ctx, http.MethodPost, "/v1/sync/"+url.PathEscape(id.Rig)+"/"+url.PathEscape(id.Name)+"/push", &res)
	return res, err
}

// SyncPull asks the daemon to take a polecat's data and merge it (or, with
// dryRun, say what a merge would do).
func (c *Client) SyncPull(ctx context.Context, id wire.Identity, dryRun bool) (wire.SyncResult, error) {
	var res wire.SyncResult
	q := ""
	if dryRun {
		q = "?dry_run=1"
	}
	err := c.doLong(ctx, http.MethodPost, "/v1/sync/"+url.PathEscape(id.Rig)+"/"+url.PathEscape(id.Name)+"/pull"+q, &res)
	return res, err
}

// SyncLog fetches the transfer journal.
func (c *Client) SyncLog(ctx context.Context) ([]SyncRecord, error) {
	var recs []SyncRecord
	err := c.do(ctx, http.MethodGet, "/v1/sync/log", &recs)
	return recs, err
}

// SyncStatus fetches the data channel's configuration and roots.
func (c *Client) SyncStatus(ctx context.Context) (SyncStatus, error) {
	var st SyncStatus
	err := c.do(ctx, http.MethodGet, "/v1/sync/status", &st)
	return st, err
}
