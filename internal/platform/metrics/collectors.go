package metrics

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/quarrydb/quarry/ddb"
	"github.com/quarrydb/quarry/internal/platform/egress"
)

// scalar is one unlabelled metric read from a snapshot of type T.
type scalar[T any] struct {
	desc  *prometheus.Desc
	typ   prometheus.ValueType
	value func(T) float64
}

func newScalar[T any](name, help string, typ prometheus.ValueType, value func(T) float64) scalar[T] {
	return scalar[T]{prometheus.NewDesc(name, help, nil, nil), typ, value}
}

// storeCollector exports the embedded store's metrics, read from one
// Store.Metrics snapshot per scrape: requests, errors and latency per
// operation, and Pebble's storage figures.
type storeCollector struct {
	s                                  *ddb.Store
	requests, seconds, errors, latency *prometheus.Desc
	fsync                              *prometheus.Desc
	scalars                            []scalar[ddb.Metrics]
}

// NewStoreCollector returns the collector of s's metrics.
func NewStoreCollector(s *ddb.Store) *storeCollector {
	gauge, counter := prometheus.GaugeValue, prometheus.CounterValue
	return &storeCollector{
		s:        s,
		requests: prometheus.NewDesc("quarry_ddb_requests_total", "Store requests served, by operation (over HTTP and in-process).", []string{"op"}, nil),
		seconds:  prometheus.NewDesc("quarry_ddb_request_seconds_total", "Time spent serving store requests, by operation.", []string{"op"}, nil),
		errors:   prometheus.NewDesc("quarry_ddb_errors_total", "Store requests answered with an error, by operation and error type.", []string{"op", "type"}, nil),
		latency:  prometheus.NewDesc("quarry_ddb_request_duration_seconds", "Time to serve store requests, by operation.", []string{"op"}, nil),
		fsync:    prometheus.NewDesc("quarry_ddb_wal_fsync_duration_seconds", "Latency of the write-ahead log's fsyncs, as Pebble measures them.", nil, nil),
		scalars: []scalar[ddb.Metrics]{
			newScalar("quarry_ddb_tables", "Tables in the store.", gauge, func(m ddb.Metrics) float64 { return float64(m.Tables) }),
			newScalar("quarry_ddb_disk_bytes", "Space the store's files take.", gauge, func(m ddb.Metrics) float64 { return float64(m.DiskBytes) }),
			newScalar("quarry_ddb_block_cache_bytes", "Bytes in the store's block cache.", gauge, func(m ddb.Metrics) float64 { return float64(m.BlockCacheBytes) }),
			newScalar("quarry_ddb_block_cache_hits_total", "Block cache hits.", counter, func(m ddb.Metrics) float64 { return float64(m.BlockCacheHits) }),
			newScalar("quarry_ddb_block_cache_misses_total", "Block cache misses.", counter, func(m ddb.Metrics) float64 { return float64(m.BlockCacheMisses) }),
			newScalar("quarry_ddb_memtable_bytes", "Writes buffered in memory, not yet flushed.", gauge, func(m ddb.Metrics) float64 { return float64(m.MemTableBytes) }),
			newScalar("quarry_ddb_flushes_total", "Memtable flushes.", counter, func(m ddb.Metrics) float64 { return float64(m.Flushes) }),
			newScalar("quarry_ddb_compactions_total", "Compactions.", counter, func(m ddb.Metrics) float64 { return float64(m.Compactions) }),
			newScalar("quarry_ddb_wal_bytes_total", "Bytes written to the write-ahead log.", counter, func(m ddb.Metrics) float64 { return float64(m.WALBytes) }),
			newScalar("quarry_ddb_corrupt_items_total", "Stored items Query, Scan, restores or enabling TTL skipped, and change-log records point-in-time restores skipped, because they could not be decoded (each is logged).", counter, func(m ddb.Metrics) float64 { return float64(m.CorruptItems) }),
		},
	}
}

// Describe sends the descriptions of every metric Collect sends.
func (c *storeCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.requests
	ch <- c.seconds
	ch <- c.errors
	ch <- c.latency
	ch <- c.fsync
	for _, s := range c.scalars {
		ch <- s.desc
	}
}

// Collect sends the store's metrics, from one snapshot.
func (c *storeCollector) Collect(ch chan<- prometheus.Metric) {
	m := c.s.Metrics()
	for _, o := range m.Ops {
		ch <- prometheus.MustNewConstMetric(c.requests, prometheus.CounterValue, float64(o.Requests), o.Op)
		ch <- prometheus.MustNewConstMetric(c.seconds, prometheus.CounterValue, o.Seconds, o.Op)
		for t, n := range o.Errors {
			ch <- prometheus.MustNewConstMetric(c.errors, prometheus.CounterValue, float64(n), o.Op, t)
		}
		ch <- constHistogram(c.latency, o.Latency, o.Op)
	}
	ch <- constHistogram(c.fsync, m.WALFsync)
	for _, s := range c.scalars {
		ch <- prometheus.MustNewConstMetric(s.desc, s.typ, s.value(m))
	}
}

// constHistogram returns h as a Prometheus histogram of desc.
func constHistogram(desc *prometheus.Desc, h ddb.Histogram, labels ...string) prometheus.Metric {
	buckets := make(map[float64]uint64, len(h.Bounds))
	for i, b := range h.Bounds {
		buckets[b] = h.Counts[i]
	}
	return prometheus.MustNewConstHistogram(desc, h.Count, h.Sum, buckets, labels...)
}

// egressCollector exports the egress proxy's counters.
type egressCollector struct {
	p       *egress.Proxy
	scalars []scalar[egress.Stats]
}

// NewEgressCollector returns the collector of p's counters.
func NewEgressCollector(p *egress.Proxy) *egressCollector {
	counter := func(name, help string, v func(egress.Stats) int64) scalar[egress.Stats] {
		return newScalar(name, help, prometheus.CounterValue, func(st egress.Stats) float64 { return float64(v(st)) })
	}
	return &egressCollector{p: p, scalars: []scalar[egress.Stats]{
		counter("quarry_egress_tunnels_total", "CONNECT tunnels the browsers' egress proxy opened.", func(st egress.Stats) int64 { return st.Tunnels }),
		counter("quarry_egress_requests_total", "Plain-http requests the egress proxy forwarded.", func(st egress.Stats) int64 { return st.Requests }),
		counter("quarry_egress_refused_total", "Browser connections the network policy refused.", func(st egress.Stats) int64 { return st.Refused }),
		counter("quarry_egress_failed_total", "Browser connections whose target could not be reached.", func(st egress.Stats) int64 { return st.Failed }),
		counter("quarry_egress_bytes_total", "Bytes the egress proxy relayed, both directions.", func(st egress.Stats) int64 { return st.Bytes }),
	}}
}

// Describe sends the descriptions of the proxy's counters.
func (c *egressCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, s := range c.scalars {
		ch <- s.desc
	}
}

// Collect sends the proxy's counters, from one snapshot.
func (c *egressCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.p.Stats()
	for _, s := range c.scalars {
		ch <- prometheus.MustNewConstMetric(s.desc, s.typ, s.value(st))
	}
}

// StoreHandler serves the store's wire protocol, and GET /metrics with the
// store's metrics and the process's, for `quarry ddb serve`.
func StoreHandler(s *ddb.Store) http.Handler {
	reg := New()
	reg.Register(NewStoreCollector(s))
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", reg)
	store := s.Handler()
	mux.Handle("/", store)
	// Every DynamoDB request is a POST to "/": the mux, which would route
	// it to the store too, is left out of its path.
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/" && r.Method == http.MethodPost {
			store.ServeHTTP(w, r)
			return
		}
		mux.ServeHTTP(w, r)
	})
}
