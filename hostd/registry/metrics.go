package registry

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/polecat-sidecar/sidecar/tunnel"
)

// metrics count tunnels; the gauge of connected ones is read from the
// registry at scrape time.
type metrics struct {
	accepted *prometheus.CounterVec
}

func newMetrics() *metrics {
	return &metrics{accepted: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sidecar_tunnels_accepted_total",
		Help: "Tunnels accepted, by transport (tcp means the agent fell back from QUIC)."}, []string{"transport"})}
}

var tunnelsDesc = prometheus.NewDesc("sidecar_tunnels", "Connected tunnels by transport.", []string{"transport"}, nil)

// Collectors are the registry's metrics, for hostd to register.
func (r *Registry) Collectors() []prometheus.Collector {
	return []prometheus.Collector{r.metrics.accepted, tunnelGauge{r}}
}

// tunnelGauge reports connected tunnels by transport at scrape time.
type tunnelGauge struct{ r *Registry }

func (g tunnelGauge) Describe(ch chan<- *prometheus.Desc) { ch <- tunnelsDesc }

func (g tunnelGauge) Collect(ch chan<- prometheus.Metric) {
	n := map[string]float64{tunnel.TransportQUIC: 0, tunnel.TransportTCP: 0}
	for _, info := range g.r.Snapshot() {
		n[info.Transport]++
	}
	for tr, v := range n {
		ch <- prometheus.MustNewConstMetric(tunnelsDesc, prometheus.GaugeValue, v, tr)
	}
}
