package git

import (
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics count git requests by service and outcome, their bytes, and
// what the host worktree guard did.
type metrics struct {
	requests *prometheus.CounterVec
	bytes    *prometheus.CounterVec
	guard    *prometheus.CounterVec
}

func newMetrics() *metrics {
	return &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sidecar_git_requests_total",
			Help: "Git smart HTTP requests, by service (upload-pack, receive-pack, other) and outcome (ok, refused, error)."}, []string{"service", "outcome"}),
		bytes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sidecar_git_bytes_total",
			Help: "Bytes of git requests, by service and direction (in: from the polecat, out: to it)."}, []string{"service", "direction"}),
		guard: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sidecar_git_worktree_guard_total",
			Help: "Pushed refs whose checkout in a host worktree would have changed what host processes run or follow there, by action (refuse: the push refused; skip: it landed, the worktree not updated), as git.worktree_guard chose."}, []string{"action"}),
	}
}

// Collectors are the git service's metrics, for hostd to register.
func (s *Service) Collectors() []prometheus.Collector {
	return []prometheus.Collector{s.metrics.requests, s.metrics.bytes, s.metrics.guard}
}

// observe counts one request. The labels come from a fixed set, never
// from what the polecat sent.
func (m *metrics) observe(op string, status int, err error, in, out int64) {
	service := "other"
	switch {
	case strings.Contains(op, "upload-pack"):
		service = "upload-pack"
	case strings.Contains(op, "receive-pack"):
		service = "receive-pack"
	}
	outcome := "ok"
	switch {
	case err == nil:
	case status >= 400 && status < 500:
		outcome = "refused"
	default:
		outcome = "error"
	}
	m.requests.WithLabelValues(service, outcome).Inc()
	m.bytes.WithLabelValues(service, "in").Add(float64(in))
	m.bytes.WithLabelValues(service, "out").Add(float64(out))
}

// countingWriter counts the response's body bytes.
type countingWriter struct {
	http.ResponseWriter
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.ResponseWriter.Write(p)
	c.n += int64(n)
	return n, err
}

// Unwrap lets http.ResponseController reach the connection (flushes).
func (c *countingWriter) Unwrap() http.ResponseWriter { return c.ResponseWriter }

// countingBody counts the request body's bytes as read, and gives each
// read idle to make progress: an upload never finished ends the request.
type countingBody struct {
	io.ReadCloser
	rc   *http.ResponseController
	idle time.Duration
	n    int64
}

func (c *countingBody) Read(p []byte) (int, error) {
	_ = c.rc.SetReadDeadline(time.Now().Add(c.idle))
	n, err := c.ReadCloser.Read(p)
	c.n += int64(n)
	return n, err
}
