package ddb

import (
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// Per-operation counters, kept for every request the wire protocol serves
// (over HTTP and from in-process clients alike), and a snapshot of them
// with Pebble's figures for monitoring (Store.Metrics).

// opCounter counts one operation's requests.
type opCounter struct {
	requests atomic.Int64
	nanos    atomic.Int64
	mu       sync.Mutex
	errors   map[string]int64 // by error type
}

// opStats holds a counter for every registered operation; the map is
// filled once, so lookups need no lock.
type opStats struct {
	once sync.Once
	byOp map[string]*opCounter
	// corruptItems counts the stored items Query and Scan skipped because
	// they could not be decoded (corrupt.go).
	corruptItems atomic.Int64
}

// init makes the counters, once: the operations are all registered by then.
func (st *opStats) init() {
	st.once.Do(func() {
		st.byOp = map[string]*opCounter{}
		for _, table := range []map[string]opFunc{dynamoOps, streamsOps} {
			for name := range table {
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
	// CorruptItems counts the stored items that Query and Scan left out of
	// their pages because they could not be decoded (each is also logged
	// with its key); 0 on a healthy store.
	CorruptItems int64
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
	m.CorruptItems = st.corruptItems.Load()
	return m
}
