package upstream

import "github.com/prometheus/client_golang/prometheus"

// pendingDesc is the queue's length, read at scrape time.
var pendingDesc = prometheus.NewDesc("sidecar_upstream_pending", "Branches waiting to be pushed to origin.", nil, nil)

// Collectors are the queue's metrics, for hostd to register.
func (u *Queue) Collectors() []prometheus.Collector {
	return []prometheus.Collector{pendingGauge{u}}
}

type pendingGauge struct{ u *Queue }

func (g pendingGauge) Describe(ch chan<- *prometheus.Desc) { ch <- pendingDesc }

func (g pendingGauge) Collect(ch chan<- prometheus.Metric) {
	g.u.mu.Lock()
	n := len(g.u.items)
	g.u.mu.Unlock()
	ch <- prometheus.MustNewConstMetric(pendingDesc, prometheus.GaugeValue, float64(n))
}
