package wire

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// The data channel (KindSync) moves one archive (package sync's format)
// per stream. The metadata is a SyncRequest; the archive's sender writes
// the archive and half-closes; the receiver, having extracted (on hostd,
// merged) it, answers with one SyncResult. Each side applies its own
// policy when it packs and again when it unpacks: push and pull carry
// hostd's, which the agent packs uploads with too; push-rig the rig's,
// which the agent only unpacks with. docs/protocol.md, "Data (sync)".
const (
	// SyncFetch, agent -> hostd: the agent has no data yet; hostd pushes
	// (on a stream of its own) and answers with the push's result.
	SyncFetch = "fetch"
	// SyncPush, hostd -> agent: hostd sends its archive (on a fetch, or
	// hostd sync push).
	SyncPush = "push"
	// SyncPull, hostd -> agent: the agent sends its archive (hostd sync
	// pull).
	SyncPull = "pull"
	// SyncUpload, agent -> hostd: the agent sends its archive (a
	// checkpoint, teardown).
	SyncUpload = "upload"
	// SyncPushRig, hostd -> agent, after a push: the files the polecat's
	// rig shares with all its polecats (Gas Town's polecats/.claude),
	// read-only: the agent installs them beside its own, never sends them.
	SyncPushRig = "push-rig"
)

// SyncNoData starts the reason an agent refuses a pull with when its
// container has none of the polecat's data yet (nothing was ever
// installed, or its data root is not the one its base was taken from):
// hostd takes it as nothing to merge, and a push may follow.
const SyncNoData = "this container has not received the polecat's data yet"

// IsSyncNoData says whether err is an agent's refusal of a pull because
// its container has no data yet (SyncNoData).
func IsSyncNoData(err error) bool {
	var re *RemoteError
	return errors.As(err, &re) && strings.HasPrefix(re.Reason, SyncNoData)
}

// MaxSyncResult bounds a SyncResult.
const MaxSyncResult = 1 << 20

// SyncRequest is a sync stream's metadata.
type SyncRequest struct {
	// Op is SyncFetch, SyncPush, SyncPull, SyncUpload or SyncPushRig.
	Op string `json:"op"`
	// Include and Exclude are hostd's policy (push, pull, push-rig), for
	// the agent to pack and unpack with.
	Include []string `json:"include,omitempty"`
	Exclude []string `json:"exclude,omitempty"`
	// Reason says why an upload happens: "teardown" or "checkpoint".
	Reason string `json:"reason,omitempty"`
	// DryRun asks hostd to report a pull's merge without doing it.
	DryRun bool `json:"dry_run,omitempty"`
	// Full asks the agent to send every file on a pull, not only those
	// changed since the last exchange (hostd lost, or never had, the base
	// the agent's archive would refer to).
	Full bool `json:"full,omitempty"`
}

// SyncChange is what a merge did with one path (package sync's Change).
type SyncChange struct {
	Path   string `json:"path"`
	Action string `json:"action"`
	Copy   string `json:"copy,omitempty"`
}

// SyncResult is the receiver's answer to one archive.
type SyncResult struct {
	// Files and Bytes count the files the archive held.
	Files int   `json:"files"`
	Bytes int64 `json:"bytes"`
	// Changes are what hostd's merge did (pull, upload), as many as fit
	// the result; More counts those left out.
	Changes []SyncChange `json:"changes,omitempty"`
	More    int          `json:"more,omitempty"`
	// Skipped lists what the container left out although the policy lets
	// it cross (a symlink leading out of its data root, something not a
	// file, directory or symlink), as its manifest said.
	Skipped []string `json:"skipped,omitempty"`
	// Error says why the archive was refused; nothing was changed.
	Error string `json:"error,omitempty"`
}

// WriteSyncResult writes r.
func WriteSyncResult(w io.Writer, r SyncResult) error {
	return json.NewEncoder(w).Encode(r)
}

// ReadSyncResult reads one SyncResult of at most MaxSyncResult bytes.
func ReadSyncResult(r io.Reader) (SyncResult, error) {
	var res SyncResult
	d := json.NewDecoder(io.LimitReader(r, MaxSyncResult))
	d.DisallowUnknownFields()
	if err := d.Decode(&res); err != nil {
		return res, fmt.Errorf("reading the sync result: %w", err)
	}
	return res, nil
}
