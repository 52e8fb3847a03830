package liveness

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/polecat-sidecar/sidecar/heartbeat"
)

// metrics are the per-polecat gauges, read at scrape time from the judge
// and the registry so beats cost nothing extra, and the beat counter.
type metrics struct {
	s     *Service
	beats *prometheus.CounterVec

	state, beatAge, rtt, cpu, rss *prometheus.Desc
}

func newMetrics(s *Service) *metrics {
	pl := []string{"rig", "polecat"}
	return &metrics{
		s: s,
		beats: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sidecar_heartbeats_total",
			Help: "Heartbeats received, by result (accepted or refused)."}, []string{"result"}),
		state:   prometheus.NewDesc("sidecar_polecat_state", "1 for the polecat's current state, 0 for the others.", append(pl, "state"), nil),
		beatAge: prometheus.NewDesc("sidecar_polecat_beat_age_seconds", "Time since the polecat's last heartbeat.", pl, nil),
		rtt:     prometheus.NewDesc("sidecar_polecat_rtt_seconds", "Round-trip time of the polecat's tunnel.", pl, nil),
		cpu:     prometheus.NewDesc("sidecar_polecat_cpu_percent", "CPU use of the polecat's session (100 = one core), from its last beat.", pl, nil),
		rss:     prometheus.NewDesc("sidecar_polecat_rss_bytes", "Resident memory of the polecat's session, from its last beat.", pl, nil),
	}
}

// Collectors are the liveness metrics, for hostd to register.
func (s *Service) Collectors() []prometheus.Collector {
	return []prometheus.Collector{s.metrics, s.metrics.beats}
}

// Describe implements prometheus.Collector.
func (m *metrics) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{m.state, m.beatAge, m.rtt, m.cpu, m.rss} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (m *metrics) Collect(ch chan<- prometheus.Metric) {
	for _, p := range m.s.Rows() {
		for _, s := range heartbeat.States {
			v := 0.0
			if string(s) == p.State {
				v = 1
			}
			ch <- prometheus.MustNewConstMetric(m.state, prometheus.GaugeValue, v, p.Rig, p.Name, string(s))
		}
		if !p.LastBeat.IsZero() {
			ch <- prometheus.MustNewConstMetric(m.beatAge, prometheus.GaugeValue, time.Since(p.LastBeat).Seconds(), p.Rig, p.Name)
			ch <- prometheus.MustNewConstMetric(m.cpu, prometheus.GaugeValue, p.CPUPercent, p.Rig, p.Name)
			ch <- prometheus.MustNewConstMetric(m.rss, prometheus.GaugeValue, float64(p.RSSBytes), p.Rig, p.Name)
		}
		if p.Connected {
			ch <- prometheus.MustNewConstMetric(m.rtt, prometheus.GaugeValue, p.RTTMillis/1000, p.Rig, p.Name)
		}
	}
}
