package ddb

import (
	"math"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	dto "github.com/prometheus/client_model/go"
)

// Per-operation counters, kept for every request the wire protocol serves
// (over HTTP and from in-process clients alike), and a snapshot of them
// with Pebble's figures for monitoring (Store.Metrics).

// opLatencyBounds are the upper bounds, in seconds, of the buckets of
// the per-operation latency histograms (OpMetrics.Latency).
var opLatencyBounds = [...]float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}

// opCounter counts one operation's requests.
type opCounter struct {
	requests atomic.Int64
	nanos    atomic.Int64
	// buckets counts the requests by latency: buckets[i] those that took
	// at most opLatencyBounds[i] (and more than the bound before), the
	// last one those slower than every bound.
	buckets [len(opLatencyBounds) + 1]atomic.Uint64
	mu      sync.Mutex
	errors  map[string]int64 // by error type
}

// opStats holds a counter for every operation of the operation table; the
// map is filled once, so lookups need no lock.
type opStats struct {
	once sync.Once
	byOp map[string]*opCounter
	// corruptItems counts the stored items Query, Scan, restores and
	// enabling TTL skipped, and the change-log records point-in-time
	// restores skipped, because they could not be decoded (corrupt.go).
	corruptItems atomic.Int64
}

// init makes the counters, once.
func (st *opStats) init() {
	st.once.Do(func() {
		st.byOp = map[string]*opCounter{}
		for _, ops := range operations {
			for name := range ops {
				st.byOp[name] = &opCounter{}
			}
		}
	})
}

// record counts one request of op that took d and failed with errType
// ("" for success).
func (st *opStats) record(op string, d time.Duration, errType string) {
	st.init()
	c := st.byOp[op]
	if c == nil {
		return
	}
	c.requests.Add(1)
	c.nanos.Add(int64(d))
	c.buckets[sort.SearchFloat64s(opLatencyBounds[:], d.Seconds())].Add(1)
	if errType != "" {
		c.mu.Lock()
		if c.errors == nil {
			c.errors = map[string]int64{}
		}
		c.errors[errType]++
		c.mu.Unlock()
	}
}

// OpMetrics are one operation's counts since the store was opened.
type OpMetrics struct {
	Op       string
	Requests int64
	// Errors counts the failed requests by error type
	// (ConditionalCheckFailedException, ValidationException, ...).
	Errors map[string]int64
	// Seconds is the time spent serving the requests, in all.
	Seconds float64
	// Latency is the distribution of the requests' durations (the same
	// bounds for every operation).
	Latency Histogram
}

// Histogram is a distribution of durations, cumulative as Prometheus
// has it: Counts[i] is the number of observations of at most Bounds[i]
// seconds.
type Histogram struct {
	Bounds []float64
	Counts []uint64
	// Count is the number of observations, Sum their total in seconds.
	Count uint64
	Sum   float64
}

// Metrics is a snapshot of a store's counters and storage figures.
type Metrics struct {
	// Ops lists the operations called at least once, by name.
	Ops    []OpMetrics
	Tables int
	// DiskBytes is the space the data directory's files take.
	DiskBytes uint64
	// BlockCacheBytes, BlockCacheHits and BlockCacheMisses describe the
	// block cache (--ddb-cache-mb).
	BlockCacheBytes, BlockCacheHits, BlockCacheMisses int64
	// MemTableBytes is the size of the write buffers not yet flushed.
	MemTableBytes uint64
	// Flushes and Compactions count Pebble's background work.
	Flushes, Compactions int64
	// WALBytes counts the bytes written to the write-ahead log.
	WALBytes uint64
	// WALFsync is the distribution of the write-ahead log's fsync
	// latencies, as Pebble measures them (empty until the first fsync;
	// --ddb-sync off fsyncs only when a log file is rotated or closed).
	WALFsync Histogram
	// CorruptItems counts the stored items that Query and Scan left out of
	// their pages, restores left out of the new table and enabling TTL
	// passed over, and the change-log records point-in-time restores
	// skipped, because they could not be decoded (each is also logged with
	// its key or sequence number); 0 on a healthy store.
	CorruptItems int64
}

// Requests is how many requests of operation op (e.g. "UpdateItem") the
// store had served at the snapshot; 0 for one never called.
func (m Metrics) Requests(op string) int64 {
	for _, o := range m.Ops {
		if o.Op == op {
			return o.Requests
		}
	}
	return 0
}

// Metrics returns a snapshot of the store's counters and storage figures.
func (s *Store) Metrics() Metrics {
	var m Metrics
	st := &s.stats
	st.init()
	for name, c := range st.byOp {
		n := c.requests.Load()
		if n == 0 {
			continue
		}
		om := OpMetrics{Op: name, Requests: n, Seconds: time.Duration(c.nanos.Load()).Seconds(), Errors: map[string]int64{}}
		om.Latency = Histogram{Bounds: append([]float64(nil), opLatencyBounds[:]...), Counts: make([]uint64, len(opLatencyBounds)), Sum: om.Seconds}
		for i := range c.buckets {
			om.Latency.Count += c.buckets[i].Load()
			if i < len(opLatencyBounds) {
				om.Latency.Counts[i] = om.Latency.Count
			}
		}
		c.mu.Lock()
		for k, v := range c.errors {
			om.Errors[k] = v
		}
		c.mu.Unlock()
		m.Ops = append(m.Ops, om)
	}
	sort.Slice(m.Ops, func(i, j int) bool { return m.Ops[i].Op < m.Ops[j].Op })
	s.mu.RLock()
	m.Tables = len(s.tables)
	s.mu.RUnlock()
	pm := s.db.Metrics()
	m.DiskBytes = pm.DiskSpaceUsage()
	m.BlockCacheBytes, m.BlockCacheHits, m.BlockCacheMisses = pm.BlockCache.Size, pm.BlockCache.Hits, pm.BlockCache.Misses
	m.MemTableBytes = pm.MemTable.Size
	m.Flushes, m.Compactions = pm.Flush.Count, pm.Compact.Count
	m.WALBytes = pm.WAL.BytesWritten
	if h := pm.LogWriter.FsyncLatency; h != nil {
		m.WALFsync = fsyncHistogram(h)
	}
	m.CorruptItems = st.corruptItems.Load()
	return m
}

// fsyncLatencyBounds are the bucket bounds, in seconds, WALFsync keeps
// of Pebble's (a hundred of them, in nanoseconds): a cumulative
// histogram stays exact when buckets are left out.
var fsyncLatencyBounds = []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}

// histogramWriter is what fsyncHistogram reads of Pebble's histogram
// (a prometheus.Histogram).
type histogramWriter interface{ Write(*dto.Metric) error }

// fsyncHistogram converts Pebble's fsync histogram, observed in
// nanoseconds, to seconds, keeping for each of fsyncLatencyBounds the
// first of Pebble's bounds at or above it (rounded).
func fsyncHistogram(h histogramWriter) Histogram {
	var m dto.Metric
	if err := h.Write(&m); err != nil || m.Histogram == nil {
		return Histogram{}
	}
	ph := m.Histogram
	out := Histogram{Count: ph.GetSampleCount(), Sum: ph.GetSampleSum() / 1e9}
	pb := ph.GetBucket()
	j := 0
	for _, want := range fsyncLatencyBounds {
		for j < len(pb) && pb[j].GetUpperBound()/1e9 < want*(1-1e-9) {
			j++
		}
		if j == len(pb) || math.IsInf(pb[j].GetUpperBound(), 1) {
			break
		}
		// To six significant digits: 10 s rather than 9.999999999999957.
		b, _ := strconv.ParseFloat(strconv.FormatFloat(pb[j].GetUpperBound()/1e9, 'g', 6, 64), 64)
		if n := len(out.Bounds); n > 0 && out.Bounds[n-1] == b {
			continue
		}
		out.Bounds = append(out.Bounds, b)
		out.Counts = append(out.Counts, pb[j].GetCumulativeCount())
	}
	return out
}
