package server

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"slices"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/polecat-sidecar/sidecar/hostd/limits"
	"github.com/polecat-sidecar/sidecar/tunnel"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// collectorSource is a service with metrics of its own.
type collectorSource interface {
	Collectors() []prometheus.Collector
}

// metrics registers every service's metrics, and counts streams by kind.
type metrics struct {
	reg     *prometheus.Registry
	streams *prometheus.CounterVec
	// refusedKinds counts streams of kinds hostd does not serve.
	refusedKinds atomic.Uint64
}

func newMetrics(sources ...collectorSource) *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		streams: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sidecar_streams_total",
			Help: "Streams opened by agents, by kind (kinds this version does not define counted as 'other', and refused)."}, []string{"kind"}),
	}
	m.reg.MustRegister(m.streams, limits.Collector(), collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	for _, src := range sources {
		m.reg.MustRegister(src.Collectors()...)
	}
	return m
}

// countStreams wraps h to count streams by kind; the label is bounded by
// wire.Kinds, so a peer cannot make up labels.
func (m *metrics) countStreams(h tunnel.Handler) tunnel.Handler {
	return tunnel.HandlerFunc(func(ctx context.Context, st *tunnel.Stream) {
		kind := st.Kind()
		if !slices.Contains(wire.Kinds, kind) {
			kind = "other"
			m.refusedKinds.Add(1)
		}
		m.streams.WithLabelValues(kind).Inc()
		h.ServeStream(ctx, st)
	})
}

// serve answers /metrics and /debug/pprof/ on ln until ctx ends.
func (m *metrics) serve(ctx context.Context, ln net.Listener, log *slog.Logger) error {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{}))
	// Go's profiles beside the metrics, as cloudflared serves them: the
	// listener is the operator's (loopback unless configured otherwise).
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	log.Info("serving metrics", "addr", ln.Addr().String()+"/metrics")
	return serveHTTP(ctx, &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}, ln)
}

var (
	listenerUpDesc = prometheus.NewDesc("sidecar_listener_up",
		"1 while the transport's accept loop runs; 0 means its tunnels are refused until hostd restarts.", []string{"transport"}, nil)
	acceptErrorsDesc = prometheus.NewDesc("sidecar_listener_accept_errors_total",
		"Failed accepts (out of file descriptors, say), each retried after a backoff.", []string{"transport"}, nil)
	shedDesc = prometheus.NewDesc("sidecar_handshakes_shed_total",
		"TCP connections closed unanswered because too many handshakes were in progress, in all or from their address.", nil, nil)
	refusedStreamsDesc = prometheus.NewDesc("sidecar_streams_refused_total",
		"Streams refused before their header because a polecat had too many open.", nil, nil)
)

// listenerMetrics reads the tunnel listener's health at scrape time.
type listenerMetrics struct{ s *Server }

func (m listenerMetrics) Collectors() []prometheus.Collector { return []prometheus.Collector{m} }

func (listenerMetrics) Describe(ch chan<- *prometheus.Desc) {
	ch <- listenerUpDesc
	ch <- acceptErrorsDesc
	ch <- shedDesc
	ch <- refusedStreamsDesc
}

func (m listenerMetrics) Collect(ch chan<- prometheus.Metric) {
	ln := m.s.listener()
	if ln == nil {
		return
	}
	for _, h := range ln.Health() {
		up := 0.0
		if h.Up {
			up = 1
		}
		ch <- prometheus.MustNewConstMetric(listenerUpDesc, prometheus.GaugeValue, up, h.Transport)
		ch <- prometheus.MustNewConstMetric(acceptErrorsDesc, prometheus.CounterValue, float64(h.AcceptErrors), h.Transport)
		if h.Transport == tunnel.TransportTCP {
			ch <- prometheus.MustNewConstMetric(shedDesc, prometheus.CounterValue, float64(h.Shed))
		}
	}
	ch <- prometheus.MustNewConstMetric(refusedStreamsDesc, prometheus.CounterValue, float64(ln.StreamsRefused()))
}
