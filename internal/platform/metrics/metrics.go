// Package metrics exposes quarry's operational metrics at /metrics in the
// Prometheus text exposition format (version 0.0.4): request counters per
// system and status class, gauges the systems register (live browser
// sessions, scheduled checks, indexed parts), families of labelled metrics
// gathered by collectors (the store's), plus a few Go runtime figures. It has no dependencies beyond the standard library.
package metrics

import (
	"fmt"
	"io"
	"net/http"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Registry holds the metrics of one process. The zero value is not usable;
// create one with New.
type Registry struct {
	mu         sync.Mutex
	requests   map[requestKey]*atomic.Int64
	gauges     map[string]gauge
	collectors []func() []Family
	start      time.Time
}

// Family is one metric, with labelled samples, gathered at a scrape.
type Family struct {
	// Name is prefixed with "quarry_"; Type is "counter" or "gauge".
	Name, Help, Type string
	Samples          []Sample
}

// Sample is one value of a Family.
type Sample struct {
	// Labels are name/value pairs, written in this order.
	Labels [][2]string
	Value  float64
}

// Collect registers f, called at every scrape for its families of metrics
// (those of a subsystem with labelled values, such as the store's
// per-operation counters).
func (r *Registry) Collect(f func() []Family) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.collectors = append(r.collectors, f)
}

type requestKey struct{ system, class string }

type gauge struct {
	help string
	f    func() float64
}

// New returns an empty registry.
func New() *Registry {
	return &Registry{requests: map[requestKey]*atomic.Int64{}, gauges: map[string]gauge{}, start: time.Now()}
}

// Gauge registers a gauge read from f at every scrape. name must be a
// valid metric name (it is prefixed with "quarry_"); registering a name
// again replaces it.
func (r *Registry) Gauge(name, help string, f func() float64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.gauges["quarry_"+name] = gauge{help: help, f: f}
}

// Count wraps h so that its requests are counted under system.
func (r *Registry) Count(system string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		h.ServeHTTP(rec, req)
		r.counter(system, strconv.Itoa(rec.status/100)+"xx").Add(1)
	})
}

func (r *Registry) counter(system, class string) *atomic.Int64 {
	k := requestKey{system, class}
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.requests[k]
	if c == nil {
		c = &atomic.Int64{}
		r.requests[k] = c
	}
	return c
}

// statusRecorder remembers the status a handler wrote. It passes Hijack
// and Flush through so WebSocket upgrades (the CDP proxy) keep working.
type statusRecorder struct {
	http.ResponseWriter
	status int
	wrote  bool
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

// Unwrap lets http.ResponseController reach the underlying writer
// (Hijack for WebSocket upgrades, Flush).
func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// ServeHTTP writes every metric in the text exposition format.
func (r *Registry) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	_ = r.Write(w)
}

// Write writes every metric in the text exposition format.
func (r *Registry) Write(w io.Writer) error {
	var b strings.Builder
	r.mu.Lock()
	keys := make([]requestKey, 0, len(r.requests))
	for k := range r.requests {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		return keys[i].system < keys[j].system || keys[i].system == keys[j].system && keys[i].class < keys[j].class
	})
	b.WriteString("# HELP quarry_http_requests_total HTTP requests answered, by system and status class.\n# TYPE quarry_http_requests_total counter\n")
	for _, k := range keys {
		fmt.Fprintf(&b, "quarry_http_requests_total{system=%q,code=%q} %d\n", k.system, k.class, r.requests[k].Load())
	}
	names := make([]string, 0, len(r.gauges))
	for n := range r.gauges {
		names = append(names, n)
	}
	sort.Strings(names)
	gs := make([]gauge, len(names))
	for i, n := range names {
		gs[i] = r.gauges[n]
	}
	collectors := append([]func() []Family(nil), r.collectors...)
	r.mu.Unlock()
	for i, n := range names {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s gauge\n%s %s\n", n, gs[i].help, n, n, strconv.FormatFloat(gs[i].f(), 'g', -1, 64))
	}
	for _, collect := range collectors {
		for _, f := range collect() {
			n := "quarry_" + f.Name
			fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s %s\n", n, f.Help, n, f.Type)
			for _, smp := range f.Samples {
				b.WriteString(n)
				if len(smp.Labels) > 0 {
					b.WriteByte('{')
					for i, l := range smp.Labels {
						if i > 0 {
							b.WriteByte(',')
						}
						fmt.Fprintf(&b, "%s=%q", l[0], l[1])
					}
					b.WriteByte('}')
				}
				fmt.Fprintf(&b, " %s\n", strconv.FormatFloat(smp.Value, 'g', -1, 64))
			}
		}
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	fmt.Fprintf(&b, "# HELP quarry_goroutines Goroutines.\n# TYPE quarry_goroutines gauge\nquarry_goroutines %d\n", runtime.NumGoroutine())
	fmt.Fprintf(&b, "# HELP quarry_heap_bytes Heap in use.\n# TYPE quarry_heap_bytes gauge\nquarry_heap_bytes %d\n", ms.HeapInuse)
	fmt.Fprintf(&b, "# HELP quarry_uptime_seconds Seconds since the process started.\n# TYPE quarry_uptime_seconds gauge\nquarry_uptime_seconds %.0f\n", time.Since(r.start).Seconds())
	_, err := io.WriteString(w, b.String())
	return err
}
