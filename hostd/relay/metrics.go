package relay

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// metrics count relayed commands by command and how they ended, and time
// them.
type metrics struct {
	commands *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

func newMetrics() *metrics {
	return &metrics{
		commands: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sidecar_relay_commands_total",
			Help: "Relayed gt/bd commands, by command and exit class (ok, failed: non-zero exit, signal, error: killed or not run, refused)."}, []string{"command", "exit"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "sidecar_relay_command_duration_seconds",
			Help:    "Run time of relayed gt/bd commands that ran, by command.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300}}, []string{"command"}),
	}
}

// Collectors are the relay's metrics, for hostd to register.
func (s *Service) Collectors() []prometheus.Collector {
	return []prometheus.Collector{s.metrics.commands, s.metrics.duration}
}

// commandLabel bounds the command label to what the policy allowed (the
// caller only passes a command that passed the policy, or "").
func commandLabel(cmd string) string {
	if cmd == "" {
		return "unknown"
	}
	return cmd
}

// observe counts a command that ran (or failed to run or was killed).
func (m *metrics) observe(cmd string, exit wire.RelayExit, err error, took time.Duration) {
	class := "ok"
	switch {
	case err != nil:
		class = "error"
	case exit.Signal != 0:
		class = "signal"
	case exit.Code != 0:
		class = "failed"
	}
	m.commands.WithLabelValues(commandLabel(cmd), class).Inc()
	m.duration.WithLabelValues(commandLabel(cmd)).Observe(took.Seconds())
}

// refused counts a command the relay would not run.
func (m *metrics) refused(cmd string) {
	m.commands.WithLabelValues(commandLabel(cmd), "refused").Inc()
}
