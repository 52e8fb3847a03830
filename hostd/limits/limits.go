// Package limits is the one place hostd counts a per-polecat budget being
// hit (sidecar_limit_hits_total{limit}), so that an operator graphs every
// limit the same way, whichever service enforces it.
package limits

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// The limits, as metric labels and as operators see them in logs.
const (
	Tunnels      = "tunnels"        // max_tunnels
	Renewals     = "renewals"       // renewals_per_hour
	Beats        = "beats"          // beats less than 100 ms apart
	GitProcesses = "git_processes"  // git.max_processes, git.max_processes_per_polecat
	GitPushSize  = "git_push_size"  // git.max_push_size
	GitCheckout  = "git_checkout"   // git.max_checkout_size, git.max_checkout_files
	RelayStdin   = "relay_stdin"    // relay.max_stdin_buffer, relay.stdin_stall
	RelayRate    = "relay_rate"     // relay.commands_per_minute
	Upstream     = "upstream"       // git.upstream_max_per_polecat
	Sync         = "sync"           // sync.agent_transfers_per_hour
	SyncArchive  = "sync_archive"   // sync.max_bytes, max_files, max_file_size, max_ratio, max_manifest_bytes, max_conflicts
	SyncStorage  = "sync_storage"   // sync.max_stored_bytes
	SyncDeletes  = "sync_deletes"   // sync.max_delete_share (a transfer held)
	SyncLog      = "sync_log"       // conflicts past the ten logged one by one in a transfer
	SyncJournal  = "journal_record" // a journal record's text cut to its cap
)

var hits = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sidecar_limit_hits_total",
	Help: "Times a per-polecat budget refused or cut something, by limit."}, []string{"limit"})

var total atomic.Uint64

// Hit counts one refusal by limit.
func Hit(limit string) {
	hits.WithLabelValues(limit).Inc()
	total.Add(1)
}

// Total is how many refusals there have been, of every limit.
func Total() uint64 { return total.Load() }

// Collector is the counter, for hostd to register.
func Collector() prometheus.Collector { return hits }
