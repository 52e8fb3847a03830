package data

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/polecat-sidecar/sidecar/hostd/data/journal"
)

// metrics count transfers and what they did.
type metrics struct {
	transfers *prometheus.CounterVec
	bytes     *prometheus.CounterVec
	changes   *prometheus.CounterVec
}

func newMetrics() *metrics {
	return &metrics{
		transfers: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sidecar_sync_transfers_total",
			Help: "Data transfers, by operation (push, pull, upload) and result (ok, failed)."}, []string{"op", "result"}),
		bytes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sidecar_sync_bytes_total",
			Help: "Bytes of files in the data archives transferred, by operation."}, []string{"op"}),
		changes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sidecar_sync_changes_total",
			Help: "What merges did with paths, by action (applied, merged, conflicted, deleted, kept)."}, []string{"action"}),
	}
}

// observe counts one journal record.
func (m *metrics) observe(r journal.Record) {
	result := "ok"
	if r.Error != "" {
		result = "failed"
	}
	m.transfers.WithLabelValues(r.Op, result).Inc()
	if r.DryRun {
		return
	}
	m.bytes.WithLabelValues(r.Op).Add(float64(r.Bytes))
	for action, n := range map[string]int{"applied": r.Applied, "merged": r.Merged, "conflicted": r.Conflict, "deleted": r.Deleted, "kept": r.Kept} {
		if n > 0 {
			m.changes.WithLabelValues(action).Add(float64(n))
		}
	}
}

// Collectors are the data service's metrics, for hostd to register.
func (s *Service) Collectors() []prometheus.Collector {
	return []prometheus.Collector{s.metrics.transfers, s.metrics.bytes, s.metrics.changes}
}
