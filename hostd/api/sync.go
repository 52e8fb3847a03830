package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
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

// SyncProgress is how far a transfer is: files and bytes so far, and the
// totals when known (a push knows them; a pull counts the archive's bytes
// as they arrive).
type SyncProgress struct {
	Files      int   `json:"files"`
	Bytes      int64 `json:"bytes"`
	TotalFiles int   `json:"total_files,omitempty"`
	TotalBytes int64 `json:"total_bytes,omitempty"`
}

// SyncResult is the receiver's answer to one transfer (wire.SyncResult,
// which hostd/control converts it from): the files and bytes the archive
// held, what hostd's merge changed (as many as fit; More counts the rest),
// what the sender left out although it crosses, and why the archive was
// refused (nothing then changed).
type SyncResult struct {
	Files   int          `json:"files"`
	Bytes   int64        `json:"bytes"`
	Changes []SyncChange `json:"changes,omitempty"`
	More    int          `json:"more,omitempty"`
	Skipped []string     `json:"skipped,omitempty"`
	Error   string       `json:"error,omitempty"`
}

// SyncChange is what a merge did at one path: the action (applied, kept,
// merged, conflict, deleted, ...) and, for a conflict, the copy made.
type SyncChange struct {
	Path   string `json:"path"`
	Action string `json:"action"`
	Copy   string `json:"copy,omitempty"`
}

// SyncLine is one line of a transfer's progress stream: progress, then the
// result last.
type SyncLine struct {
	Progress *SyncProgress `json:"progress,omitempty"`
	Result   *SyncResult   `json:"result,omitempty"`
}

// SyncRoot is where one connected polecat's data lives on the host.
type SyncRoot struct {
	Polecat Identity `json:"polecat"`
	Host    string   `json:"host"`
	// Rig is the directory its rig's read-only files come from.
	Rig string `json:"rig"`
	// StoredBytes is what hostd stores for it (sync.max_stored_bytes
	// counts it).
	StoredBytes int64 `json:"stored_bytes"`
	// EscapingLinks are symlinks in its data root that lead outside it, or
	// to a path that does not cross: never sent into the container.
	EscapingLinks []string `json:"escaping_links,omitempty"`
}

// SyncStatus is the data channel's configuration and each connected
// polecat's host data root (the container's is the agent's --data-root).
type SyncStatus struct {
	Include []string `json:"include"`
	Exclude []string `json:"exclude,omitempty"`
	// RigInclude is what goes into containers from their rig's root,
	// read-only.
	RigInclude []string `json:"rig_include"`
	// MaxStoredBytes is sync.max_stored_bytes.
	MaxStoredBytes int64      `json:"max_stored_bytes"`
	Roots          []SyncRoot `json:"roots"`
}

// PullOptions change what a pull does.
type PullOptions struct {
	// DryRun reports the merge without doing it.
	DryRun bool
	// AllowDeletes does a merge that deletes more of the polecat's files
	// than sync.max_delete_share would hold: the operator's word that the
	// container really deleted them.
	AllowDeletes bool
}

// SyncPush asks the daemon to send a polecat's host data into its
// container, and waits for the result; progress, when not nil, hears how
// far it is about four times a second.
func (c *Client) SyncPush(ctx context.Context, id Identity, progress func(SyncProgress)) (SyncResult, error) {
	return c.syncTransfer(ctx, "/v1/sync/"+url.PathEscape(id.Rig)+"/"+url.PathEscape(id.Name)+"/push", progress)
}

// SyncPull asks the daemon to take a polecat's data and merge it (or, with
// o.DryRun, say what a merge would do).
func (c *Client) SyncPull(ctx context.Context, id Identity, o PullOptions, progress func(SyncProgress)) (SyncResult, error) {
	q := url.Values{}
	if o.DryRun {
		q.Set("dry_run", "1")
	}
	if o.AllowDeletes {
		q.Set("allow_deletes", "1")
	}
	path := "/v1/sync/" + url.PathEscape(id.Rig) + "/" + url.PathEscape(id.Name) + "/pull"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	return c.syncTransfer(ctx, path, progress)
}

func (c *Client) syncTransfer(ctx context.Context, path string, progress func(SyncProgress)) (SyncResult, error) {
	var res SyncResult
	if progress == nil {
		err := c.doLong(ctx, http.MethodPost, path, &res)
		return res, err
	}
	if strings.Contains(path, "?") {
		path += "&progress=1"
	} else {
		path += "?progress=1"
	}
	body, err := c.openLong(ctx, http.MethodPost, path)
	if err != nil {
		return res, err
	}
	defer body.Close()
	d := json.NewDecoder(body)
	for {
		var line SyncLine
		if err := d.Decode(&line); err != nil {
			return res, fmt.Errorf("reading hostd's progress: %w", err)
		}
		switch {
		case line.Result != nil:
			return *line.Result, nil
		case line.Progress != nil:
			progress(*line.Progress)
		}
	}
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
