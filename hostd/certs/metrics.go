package certs

import "github.com/prometheus/client_golang/prometheus"

// metrics count what the certificate service decided.
type metrics struct {
	handshakes, joins, renewals *prometheus.CounterVec
}

func newMetrics() *metrics {
	return &metrics{
		handshakes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sidecar_handshakes_refused_total",
			Help: "Tunnel handshakes refused by hostd after the certificate verified, by reason."}, []string{"reason"}),
		joins: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sidecar_joins_total",
			Help: "Join requests, by result (issued or refused)."}, []string{"result"}),
		renewals: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sidecar_renewals_total",
			Help: "Certificate renewals over the tunnel, by result (issued or refused)."}, []string{"result"}),
	}
}

// Collectors are the certificate service's metrics, for hostd to register.
func (s *Service) Collectors() []prometheus.Collector {
	return []prometheus.Collector{s.metrics.handshakes, s.metrics.joins, s.metrics.renewals}
}
