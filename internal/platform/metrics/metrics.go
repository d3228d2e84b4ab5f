// Package metrics exposes quarry's operational metrics at /metrics in the
// Prometheus text exposition format, through the Prometheus client
// library: request counters and latency histograms per system and status
// class, gauges the systems register (live browser sessions, scheduled
// checks, indexed parts), collectors of subsystems (the store's, the
// egress proxy's), and the Go runtime and process collectors.
//
// Every Registry has its own prometheus.Registry: nothing is registered
// with the library's global default.
package metrics

import (
	"bufio"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Registry holds the metrics of one process. The zero value is not usable;
// create one with New.
type Registry struct {
	reg      *prometheus.Registry
	handler  http.Handler
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
}

// New returns a registry with the request metrics (quarry_http_requests_total
// and quarry_http_request_duration_seconds, filled by Count), the uptime,
// and the Go runtime and process collectors.
func New() *Registry {
	start := time.Now()
	r := &Registry{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "quarry_http_requests_total",
			Help: "HTTP requests answered, by system and status class.",
		}, []string{"system", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "quarry_http_request_duration_seconds",
			Help:    "Time to answer HTTP requests, by system and status class (WebSocket connections are left out).",
			Buckets: prometheus.DefBuckets,
		}, []string{"system", "code"}),
	}
	r.reg.MustRegister(r.requests, r.latency,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "quarry_uptime_seconds",
			Help: "Seconds since the process started.",
		}, func() float64 { return time.Since(start).Truncate(time.Second).Seconds() }))
	r.handler = promhttp.HandlerFor(r.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
	return r
}

// Gauge registers a gauge read from f at every scrape. name must be a
// valid metric name, not registered yet (it is prefixed with "quarry_");
// Gauge panics otherwise.
func (r *Registry) Gauge(name, help string, f func() float64) {
	r.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "quarry_" + name, Help: help}, f))
}

// Register adds c, a subsystem's collector, gathered at every scrape. It
// panics if c's metrics are invalid or clash with registered ones.
func (r *Registry) Register(c prometheus.Collector) {
	r.reg.MustRegister(c)
}

// Gatherer returns the registry's metrics, as a scrape gathers them.
func (r *Registry) Gatherer() prometheus.Gatherer { return r.reg }

// Count wraps h so that its requests are counted and timed under system.
// A request whose connection the handler hijacks (a WebSocket upgrade) is
// counted but not timed: its duration is that of the connection.
func (r *Registry) Count(system string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		h.ServeHTTP(rec, req)
		class := strconv.Itoa(rec.status/100) + "xx"
		r.requests.WithLabelValues(system, class).Inc()
		if !rec.hijacked {
			r.latency.WithLabelValues(system, class).Observe(time.Since(start).Seconds())
		}
	})
}

// statusRecorder remembers the status a handler wrote. It passes Hijack
// and Flush through so WebSocket upgrades (the CDP proxy) keep working.
type statusRecorder struct {
	http.ResponseWriter
	status   int
	wrote    bool
	hijacked bool
}

func (s *statusRecorder) WriteHeader(code int) {
	if !s.wrote {
		s.status, s.wrote = code, true
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	s.wrote = true
	return s.ResponseWriter.Write(b)
}

// Hijack takes over the connection (http.Hijacker), and remembers it.
func (s *statusRecorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, rw, err := http.NewResponseController(s.ResponseWriter).Hijack()
	if err == nil {
		s.hijacked = true
	}
	return c, rw, err
}

// Unwrap lets http.ResponseController reach the underlying writer
// (Flush, deadlines).
func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// ServeHTTP writes every metric in the text exposition format.
func (r *Registry) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r.handler.ServeHTTP(w, req)
}
