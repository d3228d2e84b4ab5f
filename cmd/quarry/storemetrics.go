package main

import (
	"net/http"
	"sort"

	"github.com/quarrydb/quarry/ddb"
	"github.com/quarrydb/quarry/internal/platform/egress"
	"github.com/quarrydb/quarry/internal/platform/metrics"
)

// storeFamilies returns a collector of the embedded store's metrics:
// requests, errors and time per operation, and Pebble's storage figures.
func storeFamilies(s *ddb.Store) func() []metrics.Family {
	return func() []metrics.Family {
		m := s.Metrics()
		requests := metrics.Family{Name: "ddb_requests_total", Help: "Store requests served, by operation (over HTTP and in-process).", Type: "counter"}
		seconds := metrics.Family{Name: "ddb_request_seconds_total", Help: "Time spent serving store requests, by operation.", Type: "counter"}
		errs := metrics.Family{Name: "ddb_errors_total", Help: "Store requests answered with an error, by operation and error type.", Type: "counter"}
		for _, o := range m.Ops {
			op := [2]string{"op", o.Op}
			requests.Samples = append(requests.Samples, metrics.Sample{Labels: [][2]string{op}, Value: float64(o.Requests)})
			seconds.Samples = append(seconds.Samples, metrics.Sample{Labels: [][2]string{op}, Value: o.Seconds})
			types := make([]string, 0, len(o.Errors))
			for t := range o.Errors {
				types = append(types, t)
			}
			sort.Strings(types)
			for _, t := range types {
				errs.Samples = append(errs.Samples, metrics.Sample{Labels: [][2]string{op, {"type", t}}, Value: float64(o.Errors[t])})
			}
		}
		one := func(name, help, typ string, v float64) metrics.Family {
			return metrics.Family{Name: name, Help: help, Type: typ, Samples: []metrics.Sample{{Value: v}}}
		}
		return []metrics.Family{
			requests, seconds, errs,
			one("ddb_tables", "Tables in the store.", "gauge", float64(m.Tables)),
			one("ddb_disk_bytes", "Space the store's files take.", "gauge", float64(m.DiskBytes)),
			one("ddb_block_cache_bytes", "Bytes in the store's block cache.", "gauge", float64(m.BlockCacheBytes)),
			one("ddb_block_cache_hits_total", "Block cache hits.", "counter", float64(m.BlockCacheHits)),
			one("ddb_block_cache_misses_total", "Block cache misses.", "counter", float64(m.BlockCacheMisses)),
			one("ddb_memtable_bytes", "Writes buffered in memory, not yet flushed.", "gauge", float64(m.MemTableBytes)),
			one("ddb_flushes_total", "Memtable flushes.", "counter", float64(m.Flushes)),
			one("ddb_compactions_total", "Compactions.", "counter", float64(m.Compactions)),
			one("ddb_wal_bytes_total", "Bytes written to the write-ahead log.", "counter", float64(m.WALBytes)),
			one("ddb_corrupt_items_total", "Stored items Query and Scan skipped because they could not be decoded (each is logged with its key).", "counter", float64(m.CorruptItems)),
		}
	}
}

// ddbHandler serves the store's wire protocol, and GET /metrics with the
// store's metrics, for `quarry ddb serve`.
func ddbHandler(s *ddb.Store) http.Handler {
	reg := metrics.New()
	reg.Collect(storeFamilies(s))
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", reg)
	mux.Handle("/", s.Handler())
	return mux
}

// egressFamilies returns a collector of the egress proxy's counters.
func egressFamilies(p *egress.Proxy) func() []metrics.Family {
	return func() []metrics.Family {
		st := p.Stats()
		one := func(name, help string, v int64) metrics.Family {
			return metrics.Family{Name: name, Help: help, Type: "counter", Samples: []metrics.Sample{{Value: float64(v)}}}
		}
		return []metrics.Family{
			one("egress_tunnels_total", "CONNECT tunnels the browsers' egress proxy opened.", st.Tunnels),
			one("egress_requests_total", "Plain-http requests the egress proxy forwarded.", st.Requests),
			one("egress_refused_total", "Browser connections the network policy refused.", st.Refused),
			one("egress_failed_total", "Browser connections whose target could not be reached.", st.Failed),
			one("egress_bytes_total", "Bytes the egress proxy relayed, both directions.", st.Bytes),
		}
	}
}
