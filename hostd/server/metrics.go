package server

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/polecat-sidecar/sidecar/heartbeat"
	"github.com/polecat-sidecar/sidecar/tunnel"
)

// knownKinds bound the kind label of stream counters: a peer cannot make
// up labels.
var knownKinds = map[string]bool{
	tunnel.KindRelay: true, tunnel.KindGit: true, tunnel.KindHeartbeat: true, tunnel.KindSync: true,
	tunnel.KindNudge: true, tunnel.KindCert: true, tunnel.KindPing: true,
}

var allStates = []heartbeat.State{heartbeat.Working, heartbeat.Idle, heartbeat.Stale, heartbeat.Disconnected, heartbeat.Dead, heartbeat.Revoked}

// metrics are hostd's Prometheus metrics. Per-polecat values are read at
// scrape time from the judge and the registry, so beats cost nothing extra.
type metrics struct {
	s       *Server
	streams *prometheus.CounterVec
	beats   *prometheus.CounterVec

	state, beatAge, rtt, cpu, rss, tunnels, upstream *prometheus.Desc
}

func newMetrics(s *Server) *metrics {
	pl := []string{"rig", "polecat"}
	return &metrics{
		s: s,
		streams: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sidecar_streams_total",
			Help: "Streams opened by agents, by kind (unknown kinds counted as 'other')."}, []string{"kind"}),
		beats: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sidecar_heartbeats_total",
			Help: "Heartbeats received, by result (accepted or refused)."}, []string{"result"}),
		state:    prometheus.NewDesc("sidecar_polecat_state", "1 for the polecat's current state, 0 for the others.", append(pl, "state"), nil),
		beatAge:  prometheus.NewDesc("sidecar_polecat_beat_age_seconds", "Time since the polecat's last heartbeat.", pl, nil),
		rtt:      prometheus.NewDesc("sidecar_polecat_rtt_seconds", "Round-trip time of the polecat's tunnel.", pl, nil),
		cpu:      prometheus.NewDesc("sidecar_polecat_cpu_percent", "CPU use of the polecat's session (100 = one core), from its last beat.", pl, nil),
		rss:      prometheus.NewDesc("sidecar_polecat_rss_bytes", "Resident memory of the polecat's session, from its last beat.", pl, nil),
		tunnels:  prometheus.NewDesc("sidecar_tunnels", "Connected tunnels by transport.", []string{"transport"}, nil),
		upstream: prometheus.NewDesc("sidecar_upstream_pending", "Branches waiting to be pushed to origin.", nil, nil),
	}
}

// Describe implements prometheus.Collector.
func (m *metrics) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{m.state, m.beatAge, m.rtt, m.cpu, m.rss, m.tunnels, m.upstream} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (m *metrics) Collect(ch chan<- prometheus.Metric) {
	st := m.s.Status()
	tunnels := map[string]float64{tunnel.TransportQUIC: 0, tunnel.TransportTCP: 0}
	for _, p := range st.Polecats {
		for _, s := range allStates {
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
			tunnels[p.Transport]++
			ch <- prometheus.MustNewConstMetric(m.rtt, prometheus.GaugeValue, p.RTTMillis/1000, p.Rig, p.Name)
		}
	}
	for tr, n := range tunnels {
		ch <- prometheus.MustNewConstMetric(m.tunnels, prometheus.GaugeValue, n, tr)
	}
	ch <- prometheus.MustNewConstMetric(m.upstream, prometheus.GaugeValue, float64(len(st.Upstream)))
}

// count wraps h to count streams by kind.
func (m *metrics) count(h tunnel.Handler) tunnel.Handler {
	return tunnel.HandlerFunc(func(ctx context.Context, st *tunnel.Stream) {
		kind := st.Kind()
		if !knownKinds[kind] {
			kind = "other"
		}
		m.streams.WithLabelValues(kind).Inc()
		h.ServeStream(ctx, st)
	})
}

// serve answers /metrics on addr until ctx ends.
func (m *metrics) serve(ctx context.Context, addr string) error {
	reg := prometheus.NewRegistry()
	reg.MustRegister(m, m.streams, m.beats)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { <-ctx.Done(); srv.Close() }()
	m.s.log.Info("serving metrics", "addr", ln.Addr().String()+"/metrics")
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
