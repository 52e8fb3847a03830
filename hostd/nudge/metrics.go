package nudge

import "github.com/prometheus/client_golang/prometheus"

// metrics count nudges and what became of them.
type metrics struct {
	queued   prometheus.Counter
	outcomes *prometheus.CounterVec
	attempts prometheus.Counter
}

func newMetrics() *metrics {
	return &metrics{
		queued: prometheus.NewCounter(prometheus.CounterOpts{Name: "sidecar_nudges_queued_total",
			Help: "Nudges accepted into a polecat's queue."}),
		outcomes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sidecar_nudges_total",
			Help: "Nudges ended, by outcome (submitted, failed, expired, cancelled, dropped)."}, []string{"outcome"}),
		attempts: prometheus.NewCounter(prometheus.CounterOpts{Name: "sidecar_nudge_attempts_total",
			Help: "Delivery attempts (an attempt waits up to nudge.attempt for the polecat to be idle)."}),
	}
}

// Collectors are the nudge queue's metrics, with a gauge of the nudges
// waiting, for hostd to register.
func (s *Service) Collectors() []prometheus.Collector {
	waiting := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "sidecar_nudges_waiting",
		Help: "Nudges queued and not yet delivered, over all polecats."}, func() float64 {
		n := 0
		for _, d := range s.Depth() {
			n += d
		}
		return float64(n)
	})
	return []prometheus.Collector{s.metrics.queued, s.metrics.outcomes, s.metrics.attempts, waiting}
}
